"""``POST /v1/audio/speech`` with a bad body is a 400 naming the field, in OpenAI's error
shape; nothing reaches the upstream and nothing is charged. The tests share one gateway, one
fake upstream and one key: none of them reaches the upstream or bills."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI, upstream_channel
from faregate_adapter_openai.testing.schema import validate_error

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream(module_admin: AdminClient) -> AsyncIterator[tuple[FakeOpenAI, str]]:
    """The fake upstream, a channel to it and a key."""
    async with upstream_channel(module_admin, "tts-1,tts-1-hd,gpt-4o-mini-tts", remain_quota=50 * 500_000) as found:
        yield found



@pytest.mark.parametrize(("body", "param"), [
    ({"voice": "alloy"}, "input"),
    ({"voice": "alloy", "input": ""}, "input"),
    ({"voice": "alloy", "input": "x" * 4097}, "input"),
    ({"input": "hi"}, "voice"),
    ({"input": "hi", "voice": 3}, "voice"),
    ({"input": "hi", "voice": "alloy", "speed": 4.5}, "speed"),
    ({"input": "hi", "voice": "alloy", "speed": 0.1}, "speed"),
    ({"input": "hi", "voice": "alloy", "speed": True}, "speed"),
    ({"input": "hi", "voice": "alloy", "response_format": "ogg"}, "response_format"),
    ({"input": "hi", "voice": "alloy", "stream_format": "chunks"}, "stream_format"),
    ({"input": "hi", "voice": "alloy", "instructions": "x" * 4097}, "instructions"),
    ({"input": "hi", "voice": "alloy", "sample_rate": 8000}, "sample_rate"),
    ({"input": "hi", "voice": "alloy", "model": "m" * 257}, "model"),
])
async def test_a_bad_body_is_a_400_naming_the_field(module_gateway: GatewayServer, upstream: tuple[FakeOpenAI, str],
                                                    body: dict[str, Any], param: str) -> None:
    gateway = module_gateway
    fake_openai, key = upstream
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post("/v1/audio/speech", json=body, headers={"Authorization": f"Bearer {key}"})
    assert resp.status_code == 400, resp.text
    assert validate_error(resp.json())["error"]["param"] == param
    assert not fake_openai.requests and await gateway.consume_logs() == []
