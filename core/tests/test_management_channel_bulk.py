"""Channel operations on many at once (issue 10, channels): search, enabled models,
delete disabled, batch delete and tag, tag enable / disable / models, copy, fix."""

from __future__ import annotations

import openai

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI


async def _three(admin: AdminClient, base_url: str) -> list[int]:
    return [await admin.add_channel(base_url=base_url, models="gpt-4o", name="eu-1"),
            await admin.add_channel(base_url=base_url, models="gpt-4o-mini", name="eu-2"),
            await admin.add_channel(base_url=base_url, models="o3-mini", name="us-1", group="vip")]


async def test_search_and_enabled_models(admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    ids = await _three(admin, fake_openai.base_url)
    assert (await admin.ok("GET", "/api/channel/search", params={"keyword": "eu-"}))["total"] == 2
    by_model = await admin.ok("GET", "/api/channel/search", params={"model": "o3-mini"})
    assert [c["id"] for c in by_model["items"]] == [ids[2]]
    by_group = await admin.ok("GET", "/api/channel/search", params={"group": "vip"})
    assert [c["id"] for c in by_group["items"]] == [ids[2]]
    assert all(c["key"] == "" for c in by_group["items"])
    assert await admin.ok("GET", "/api/channel/models_enabled") == ["gpt-4o", "gpt-4o-mini", "o3-mini"]


async def test_tags_batch_and_deletes(admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    ids = await _three(admin, fake_openai.base_url)
    assert await admin.ok("POST", "/api/channel/batch/tag", json={"ids": ids[:2], "tag": "eu"}) == 2
    assert await admin.ok("GET", "/api/channel/tag/models", params={"tag": "eu"}) in ("gpt-4o", "gpt-4o-mini")
    assert await admin.ok("POST", "/api/channel/tag/disabled", json={"tag": "eu"}) == 2
    assert await m.Ability.filter(enabled=True).count() == 1
    assert await admin.ok("POST", "/api/channel/tag/enabled", json={"tag": "eu"}) == 2
    await admin.ok("POST", "/api/channel/tag/disabled", json={"tag": "eu"})
    assert await admin.ok("DELETE", "/api/channel/disabled") == 2
    assert await admin.ok("POST", "/api/channel/batch", json={"ids": [ids[2]]}) == 1
    assert await m.Channel.all().count() == 0 and await m.Ability.all().count() == 0
    assert (await admin.call("POST", "/api/channel/batch", json={"ids": []}))["success"] is False


async def test_copy_serves_with_the_same_key_and_fix_rebuilds(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeOpenAI(key="sk-upstream-copy-123") as fake:
        source = await admin.add_channel(base_url=fake.base_url, models="gpt-4o", key="sk-upstream-copy-123")
        copy = (await admin.ok("POST", f"/api/channel/copy/{source}", params={"suffix": "-b"}))["id"]
        assert (await m.Channel.get(id=copy)).name.endswith("-b")
        await admin.ok("DELETE", f"/api/channel/{source}")
        await m.Ability.all().delete()  # a damaged routing index
        assert await admin.ok("POST", "/api/channel/fix") == {"success": 1, "fails": 0}
        client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(),
                                    max_retries=0)
        reply = await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
        await client.close()
        assert reply.choices[0].message.content  # the copy's key works upstream
