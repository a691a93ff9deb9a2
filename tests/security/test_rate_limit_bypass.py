"""Rate limit bypass attempts (issue 29): the model request rate limit is per user, so a user
cannot escape it by spreading requests over many API keys, nor over the group a key names."""

from __future__ import annotations

from typing import Any

import httpx

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

MODEL = "gpt-4o-mini"


async def _ask(server: GatewayServer, key: str) -> int:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                               json={"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
    return resp.status_code


async def test_many_keys_of_one_user_share_the_users_limit(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
    await admin.set_option("ModelRequestRateLimitEnabled", "true")
    await admin.set_option("ModelRequestRateLimitCount", "3")
    keys = [await admin.add_token(unlimited=True, name=f"k{n}") for n in range(6)]
    answers = [await _ask(server, key) for key in keys]
    assert answers == [200, 200, 200, 429, 429, 429]
