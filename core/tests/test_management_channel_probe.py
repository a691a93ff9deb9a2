"""Testing a channel and listing its upstream's models (issue 10, channels)."""

from __future__ import annotations

import asyncio

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

KEY = "sk-probe-upstream-0123456789"


async def test_channel_test_measures_and_shields(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeOpenAI(key=KEY) as fake:
        cid = await admin.add_channel(base_url=fake.base_url, models="gpt-4o-mini", key=KEY)
        good = await admin.http.get(f"/api/channel/test/{cid}", headers={"New-Api-User": str(admin.user_id)})
        body = good.json()
        assert body["success"] is True and body["time"] > 0
        assert fake.requests[-1]["json"]["model"] == "gpt-4o-mini"
        row = await m.Channel.get(id=cid)
        assert row.test_time > 0 and row.response_time >= 0
        fake.fail_next(401, f"Incorrect API key provided: {KEY}")
        bad = (await admin.http.get(f"/api/channel/test/{cid}", params={"model": "gpt-4o"},
                                    headers={"New-Api-User": str(admin.user_id)})).json()
        assert bad["success"] is False and "401" in bad["message"] and KEY not in bad["message"]
        models = await admin.ok("GET", f"/api/channel/fetch_models/{cid}")
        assert "gpt-4o" in models
        assert await admin.ok("GET", "/api/channel/test") is None
        for _ in range(50):
            if len(fake.requests) >= 4:
                break
            await asyncio.sleep(0.05)
        assert len(fake.requests) >= 4  # the background round tested the channel again
