"""The request body's timeout: armed only while some of the body is still on its way (a timer
per request otherwise, for a body that is in before the view runs), and a 408 when it runs out."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from faregate.errors import GatewayError
from faregate.exchange import admission
from faregate.testing.inbound import inbound_request


def exchange(request: Any, timeout: float = 5) -> Any:
    return SimpleNamespace(request=request, gateway=SimpleNamespace(settings=SimpleNamespace(body_timeout=timeout)))


async def test_a_body_that_has_arrived_is_read_without_a_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_timer(delay: float | None) -> Any:
        raise AssertionError("a timer armed for a body that had arrived")

    monkeypatch.setattr(admission.asyncio, "timeout", no_timer)
    request = inbound_request(b'{"a":1}')
    request.body_arrived = lambda: True
    assert await admission.read_body(exchange(request)) == b'{"a":1}'


async def test_a_body_still_on_its_way_times_out_with_a_408() -> None:
    async def slow() -> bytes:
        await asyncio.sleep(5)
        return b"{}"

    for arrived in (None, lambda: False):  # an edge that cannot tell, one whose body is not in
        request = inbound_request()
        request.read_body, request.body_arrived = slow, arrived
        with pytest.raises(GatewayError) as refused:
            await admission.read_body(exchange(request, timeout=0.05))
        assert refused.value.status == 408 and refused.value.code == "read_request_body_failed"
