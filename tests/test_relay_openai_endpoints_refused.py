"""OpenAI's smaller endpoints, refused by the gateway: bad moderation input is a 400 naming the
field, and the paths new-api does not serve (files, fine-tunes, image variations, deleting a
model) answer 501 after the key is checked; nothing reaches the upstream and nothing is
charged. The tests share one gateway, one fake upstream and one key (the endpoints' other
tests are in test_relay_openai_endpoints.py)."""

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
    async with upstream_channel(module_admin, "omni-moderation-latest,text-moderation-stable") as found:
        yield found



@pytest.mark.parametrize("body", [{}, {"input": ""}, {"input": [{"type": "audio"}]}, {"input": "x", "model": 3}])
async def test_bad_moderation_input_is_a_400(
    module_gateway: GatewayServer, upstream: tuple[FakeOpenAI, str], body: dict[str, Any]
) -> None:
    gateway = module_gateway
    fake_openai, key = upstream
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post("/v1/moderations", json=body, headers={"Authorization": f"Bearer {key}"})
    assert resp.status_code == 400
    assert validate_error(resp.json())["error"]["param"] in ("input", "model")
    assert not fake_openai.requests and await gateway.consume_logs() == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/images/variations"),
        ("GET", "/v1/files"),
        ("POST", "/v1/files"),
        ("GET", "/v1/files/file-1"),
        ("DELETE", "/v1/files/file-1"),
        ("GET", "/v1/files/file-1/content"),
        ("GET", "/v1/fine-tunes"),
        ("POST", "/v1/fine-tunes"),
        ("GET", "/v1/fine-tunes/ft-1"),
        ("POST", "/v1/fine-tunes/ft-1/cancel"),
        ("GET", "/v1/fine-tunes/ft-1/events"),
        ("DELETE", "/v1/models/gpt-4o"),
    ],
)
async def test_paths_new_api_does_not_serve_answer_501(
    module_gateway: GatewayServer, upstream: tuple[FakeOpenAI, str], method: str, path: str
) -> None:
    gateway = module_gateway
    fake_openai, key = upstream
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        keyed = await http.request(method, path, headers={"Authorization": f"Bearer {key}"})
        anonymous = await http.request(method, path)
    assert keyed.status_code == 501
    error = validate_error(keyed.json())["error"]
    assert (error["code"], error["type"]) == ("api_not_implemented", "new_api_error")  # new-api's RelayNotImplemented
    assert anonymous.status_code == 401  # the key is checked first, as new-api's middleware does
    assert not fake_openai.requests and await gateway.consume_logs() == []
