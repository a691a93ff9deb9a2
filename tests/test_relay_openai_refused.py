"""Chat requests the gateway refuses before any upstream call (a body that is not JSON, not
an object, without a model or with fields of the wrong type, an unknown model) get a clear
OpenAI-shaped error naming the request id; nothing reaches the upstream and nothing is charged.
The tests share one gateway, one fake upstream and one key (the relay's other tests are in
test_relay_openai.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI, upstream_channel

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "gpt-4o-mini"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream(module_admin: AdminClient) -> AsyncIterator[tuple[FakeOpenAI, str]]:
    """The fake upstream, a channel to it and a key."""
    async with upstream_channel(module_admin, MODEL) as found:
        yield found



@pytest.mark.parametrize(
    "body, status, code",
    [
        (b"{not json", 400, "bad_request_body"),
        (b"[1,2]", 400, "bad_request_body"),
        (b'{"messages": [{"role": "user", "content": "hi"}]}', 400, "invalid_request"),
        (b'{"model": "gpt-4o-mini", "messages": "hi"}', 400, "invalid_request"),
        (
            b'{"model": "gpt-4o-mini", "messages": [{"role":"user","content":"x"}], "max_tokens": "lots"}',
            400,
            "invalid_type",
        ),
        (b'{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}', 404, "model_not_found"),
    ],
)
async def test_bad_input_gets_clear_errors(
    module_gateway: GatewayServer, upstream: tuple[FakeOpenAI, str], body: bytes, status: int, code: str
) -> None:
    gateway = module_gateway
    fake_openai, key = upstream
    async with httpx.AsyncClient() as http:
        resp = await http.post(
            gateway.base_url + "/v1/chat/completions",
            content=body,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
    assert resp.status_code == status
    assert resp.json()["error"]["code"] == code
    assert "request id" in resp.json()["error"]["message"]
    assert not fake_openai.requests and await gateway.consume_logs() == []  # refused before the upstream
