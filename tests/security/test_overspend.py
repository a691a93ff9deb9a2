"""Concurrent slow requests with large prompts cannot drive a balance far below zero
(issue 8, #2): the reservation covers the estimated prompt (system text, messages, tools,
images) plus the output cap, so a balance dips below zero by at most one request's excess."""

from __future__ import annotations

import asyncio

import httpx

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs
from faregate_adapter_openai.testing import FakeOpenAI

BALANCE = 13_500
MODEL = "overspend-model"


async def test_fifty_concurrent_large_prompts_stay_within_the_bound(gateway: GatewayServer,
                                                                   admin: AdminClient) -> None:
    async with FakeOpenAI(latency=0.3, models=[MODEL]) as upstream:
        await admin.add_channel(base_url=upstream.base_url, models=MODEL)
        await admin.set_option("ModelRatio", {MODEL: 1})
        await admin.set_option("CompletionRatio", {MODEL: 1})
        key = await admin.add_token(unlimited=True)
        root = await m.User.get(username="root")
        await m.User.filter(id=root.id).update(quota=BALANCE)
        await gateway.gateway.feed.publish("user", root.id)
        big = "lorem ipsum dolor sit amet " * 400  # ~10,800 characters, ~2,700 tokens
        body = {"model": MODEL, "max_tokens": 16, "messages": [
            {"role": "system", "content": big}, {"role": "user", "content": "summarize"}],
            "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {
                "type": "object", "properties": {"q": {"type": "string", "description": big[:2000]}}}}}]}

        async def one(http: httpx.AsyncClient) -> int:
            resp = await http.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
            return resp.status_code

        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=60) as http:
            statuses = await asyncio.gather(*(one(http) for _ in range(50)))
    assert all(s in (200, 403) for s in statuses), statuses  # refused for quota, never a 5xx
    assert 0 < statuses.count(200) < 50
    rows = await consume_logs(gateway)
    await gateway.gateway.ledger.flush(return_all=True)
    final = (await m.User.get(id=root.id)).quota
    largest = max(row.quota for row in rows)
    assert final >= -largest, f"balance {final} went below one request's cost {largest}"
    assert sum(row.quota for row in rows) <= BALANCE + largest
