"""``POST /v1/embeddings`` with a bad body is a 400 naming the field, in OpenAI's error shape;
nothing reaches the upstream and nothing is charged. The tests share one gateway, one fake
upstream and one key: none of them reaches the upstream or bills (the relay's other embeddings
tests are in test_relay_embeddings.py)."""

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

MODEL = "text-embedding-3-small"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream(module_admin: AdminClient) -> AsyncIterator[tuple[FakeOpenAI, str]]:
    """The fake upstream, a channel to it and a key."""
    async with upstream_channel(module_admin, MODEL) as found:
        yield found



@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": MODEL}, "input"),
        ({"model": MODEL, "input": ""}, "input"),
        ({"model": MODEL, "input": []}, "input"),
        ({"model": MODEL, "input": [1, "mixed"]}, "input"),
        ({"model": MODEL, "input": [[1, -2]]}, "input"),
        ({"model": MODEL, "input": ["x"] * 2049}, "input"),
        ({"model": MODEL, "input": "x", "encoding_format": "hex"}, "encoding_format"),
        ({"model": MODEL, "input": "x", "dimensions": 0}, "dimensions"),
        ({"model": MODEL, "input": "x", "dimensions": True}, "dimensions"),
        ({"input": "x"}, "model"),
    ],
)
async def test_bad_input_is_a_400_naming_the_field(
    module_gateway: GatewayServer, upstream: tuple[FakeOpenAI, str], body: dict[str, Any], param: str
) -> None:
    gateway = module_gateway
    fake_openai, key = upstream
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post("/v1/embeddings", json=body, headers={"Authorization": f"Bearer {key}"})
    assert resp.status_code == 400
    error = validate_error(resp.json())["error"]
    assert error["param"] == param
    assert not fake_openai.requests  # refused before any upstream call
    assert await gateway.consume_logs() == []
