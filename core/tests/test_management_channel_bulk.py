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


async def test_tag_edit_changes_every_channel_of_the_tag(gateway: GatewayServer, admin: AdminClient,
                                                         fake_openai: FakeOpenAI) -> None:
    ids = await _three(admin, fake_openai.base_url)
    await admin.ok("POST", "/api/channel/batch/tag", json={"ids": ids[:2], "tag": "eu"})
    changed = await admin.ok("PUT", "/api/channel/tag", json={
        "tag": "eu", "new_tag": "europe", "priority": 7, "weight": 3, "models": "gpt-4o,gpt-4o-mini",
        "groups": "default,vip", "model_mapping": '{"gpt-4o-mini": "gpt-4o"}', "param_override": '{"temperature": 0}',
        "header_override": '{"X-Team": "eu"}'})
    assert changed == 2
    rows = await m.Channel.filter(id__in=ids[:2])
    assert {(r.tag, r.priority, r.weight, r.models, r.group) for r in rows} == {
        ("europe", 7, 3, "gpt-4o,gpt-4o-mini", "default,vip")}
    assert {r.header_override for r in rows} == {'{"X-Team": "eu"}'}
    abilities = await m.Ability.filter(channel_id__in=ids[:2]).values_list("group", "model", "priority", "tag")
    assert sorted(abilities) == sorted((g, mdl, 7, "europe") for g in ("default", "vip")
                                       for mdl in ("gpt-4o", "gpt-4o-mini") for _ in range(2))
    assert (await m.Channel.get(id=ids[2])).tag is None  # untouched
    # the relay follows at once: gpt-4o-mini is mapped to gpt-4o by the tag's channels, sent with their header
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0)
    await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}])
    await client.close()
    assert fake_openai.requests[-1]["json"]["model"] == "gpt-4o"
    assert fake_openai.requests[-1]["headers"]["x-team"] == "eu"
    # empty models / groups / model_mapping keep each channel's; empty overrides clear them
    await admin.ok("PUT", "/api/channel/tag", json={"tag": "europe", "models": "", "groups": "", "model_mapping": "",
                                                    "header_override": "", "new_tag": ""})
    rows = await m.Channel.filter(id__in=ids[:2])
    assert {(r.tag, r.models, r.header_override) for r in rows} == {(None, "gpt-4o,gpt-4o-mini", "")}


async def test_tag_edit_refuses_what_a_channel_update_refuses(admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    ids = await _three(admin, fake_openai.base_url)
    await admin.ok("POST", "/api/channel/batch/tag", json={"ids": ids, "tag": "all"})
    bad = [({"model_mapping": "{nope"}, "model_mapping"), ({"param_override": "[1]"}, "param_override"),
           ({"header_override": '{"Host": "evil"}'}, "header_override"), ({"weight": -1}, "weight"),
           ({"priority": "5"}, "priority"), ({"models": "m" * 300}, "model name"), ({"groups": "g" * 70}, "group"),
           ({"colour": "red"}, "colour"), ({}, "nothing to change"), ({"tag": "", "priority": 1}, "tag"),
           ({"new_tag": "t" * 129}, "new_tag")]
    for change, field in bad:
        resp = await admin.http.put("/api/channel/tag", json={"tag": "all", **change},
                                    headers={"New-Api-User": str(admin.user_id)})
        body = resp.json()
        assert resp.status_code < 500 and body["success"] is False and field in body["message"], (change, body)
    rows = await m.Channel.filter(id__in=ids)
    assert {(r.priority, r.weight, r.model_mapping, r.header_override) for r in rows} == {(0, 0, "", "")}
