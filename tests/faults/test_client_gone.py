"""A client that leaves before its answer starts never leaves quota held: the server
cancels the relay (or drops a stream it never began to send), and the reservation is
refunded with an error row, or billed for what the upstream already produced. Before this,
the reservation stayed held in the worker's memory until it stopped."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import httpx
import pytest

from faregate import jsonutil
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs, error_logs
from faregate_adapter_openai.testing import FakeOpenAI, Fault

MODEL = "gpt-4o-mini"


async def _nothing_held(server: GatewayServer) -> bool:
    for _ in range(100):
        if all(lease.reserved == 0 for lease in server.gateway.ledger.leases.values()):
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.mark.parametrize("stream", [False, True])
async def test_leaving_while_the_upstream_thinks_refunds(gateway: GatewayServer, admin: AdminClient,
                                                         fake_openai: FakeOpenAI, stream: bool) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
    key = await admin.add_token()
    fake_openai.push_fault(Fault("slow_first_byte", delay=2))
    body = {"model": MODEL, "stream": stream, "messages": [{"role": "user", "content": "are you there"}]}
    async with httpx.AsyncClient(timeout=0.5) as http:
        with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes the connection
            await http.post(gateway.base_url + "/v1/chat/completions", json=body,
                            headers={"Authorization": f"Bearer {key}"})
    assert await _nothing_held(gateway), "the reservation is still held"
    rows = await error_logs(gateway)
    assert len(rows) == 1 and jsonutil.loads(rows[0].other)["error_code"] == "client_gone"
    assert await consume_logs(gateway) == []


async def test_a_stream_body_never_started_is_settled_once() -> None:
    """The body of a streamed answer that the server closes (or drops) before asking for
    its first chunk runs no ``finally``: its finalizer settles, once, when it is collected.
    (A body that started settles itself: test_relay_openai's client-disconnect tests.)"""
    from faregate.exchange.streaming import stream_answer

    settled: list[str] = []
    closed: list[bool] = []

    class Resp:
        async def aclose(self) -> None:
            closed.append(True)

        def release(self) -> bool:
            closed.append(True)
            return True

    ex = SimpleNamespace(
        gateway=SimpleNamespace(settings=SimpleNamespace(client_gone_drain_seconds=0),
                                spawn=lambda coro: asyncio.ensure_future(coro)),
        settle=lambda usage, **kw: settled.append(kw["end_reason"]))
    opened = SimpleNamespace(reader=SimpleNamespace(usage=None, output_chars=12, other_ratios=None), first_token_ms=5)

    closed_body = stream_answer(ex, Resp(), opened)  # type: ignore[arg-type]
    await closed_body.aclose()  # the server closes it unread
    del closed_body
    await asyncio.sleep(0)
    assert settled == ["client_gone"] and closed == [True]
    settled.clear()
    dropped = stream_answer(ex, Resp(), opened)  # type: ignore[arg-type]
    del dropped  # the server drops it without entering it
    await asyncio.sleep(0)
    assert settled == ["client_gone"]
