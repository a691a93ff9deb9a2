"""Channels: CRUD with new-api's contracts, add modes, list filters, keys encrypted
at rest and absent from every view and log line, and malformed input."""

from __future__ import annotations

import logging

import httpx
import openai
import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer

SECRET = "sk-upstream-SECRET-0123456789abcdef"


def channel(**fields: object) -> dict[str, object]:
    return {"type": 1, "key": SECRET, "name": "main", "base_url": "http://127.0.0.1:9", "models": "gpt-4o-mini",
            "group": "default", **fields}


async def test_channel_crud(gateway: GatewayServer, admin: AdminClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, the ORM's SQL included
    cid = await admin.ok("POST", "/api/channel/", json={"mode": "single", "channel": channel(
        priority=5, weight=3, model_mapping='{"gpt-4o-mini": "gpt-4o"}', tag="t1")})
    assert isinstance(cid, int)

    # encrypted at rest, bound to the row
    row = await m.Channel.get(id=cid)
    assert row.key_enc.startswith("enc:v1:") and SECRET not in row.key_enc
    assert gateway.gateway.box.decrypt(row.key_enc, f"channel:{cid}") == SECRET
    assert gateway.gateway.snapshot.channels[cid].keys == [SECRET]
    abilities = await m.Ability.filter(channel_id=cid).values_list("group", "model", "priority", "enabled")
    assert abilities == [("default", "gpt-4o-mini", 5, True)]

    got = await admin.ok("GET", f"/api/channel/{cid}")
    assert got["key"] == "" and got["name"] == "main" and got["priority"] == 5 and got["weight"] == 3
    assert got["model_mapping"] == '{"gpt-4o-mini": "gpt-4o"}' and got["tag"] == "t1"

    # update: partial; an empty key keeps the stored one
    updated = await admin.ok("PUT", "/api/channel/", json={"id": cid, "name": "renamed", "key": "",
                                                            "models": "gpt-4o-mini,gpt-4o", "group": "default,vip"})
    assert updated["name"] == "renamed" and updated["priority"] == 5 and updated["key"] == ""
    row = await m.Channel.get(id=cid)
    assert gateway.gateway.box.decrypt(row.key_enc, f"channel:{cid}") == SECRET
    assert await m.Ability.filter(channel_id=cid).count() == 4
    await admin.ok("PUT", "/api/channel/", json={"id": cid, "key": "sk-rotated-key-000000000", "status": 2})
    row = await m.Channel.get(id=cid)
    assert gateway.gateway.box.decrypt(row.key_enc, f"channel:{cid}") == "sk-rotated-key-000000000"
    assert not await m.Ability.filter(channel_id=cid, enabled=True).exists()

    await admin.ok("DELETE", f"/api/channel/{cid}")
    assert not await m.Ability.filter(channel_id=cid).exists()
    assert cid not in gateway.gateway.snapshot.channels
    assert (await admin.call("GET", f"/api/channel/{cid}"))["success"] is False
    assert (await admin.call("DELETE", f"/api/channel/{cid}"))["success"] is False
    assert (await admin.call("PUT", "/api/channel/", json={"id": cid, "name": "x"}))["success"] is False

    for text in (caplog.text, *(r.getMessage() for r in caplog.records)):
        assert SECRET not in text and "sk-rotated-key-000000000" not in text


async def test_add_modes(gateway: GatewayServer, admin: AdminClient) -> None:
    keys = "sk-key-aaaaaaaa\n\nsk-key-bbbbbbbb\n  sk-key-cccccccc  \n"
    ids = await admin.ok("POST", "/api/channel/", json={"mode": "batch", "channel": channel(key=keys)})
    assert isinstance(ids, list) and len(ids) == 3
    box = gateway.gateway.box
    stored = [box.decrypt((await m.Channel.get(id=i)).key_enc, f"channel:{i}") for i in ids]
    assert stored == ["sk-key-aaaaaaaa", "sk-key-bbbbbbbb", "sk-key-cccccccc"]

    one = await admin.ok("POST", "/api/channel/", json={"mode": "multi_to_single", "channel": channel(key=keys)})
    assert isinstance(one, int)
    assert gateway.gateway.snapshot.channels[one].keys == ["sk-key-aaaaaaaa", "sk-key-bbbbbbbb", "sk-key-cccccccc"]

    # mode defaults to single
    single = await admin.ok("POST", "/api/channel/", json={"channel": channel()})
    assert isinstance(single, int)
    assert await m.Channel.all().count() == 5

    for body in ({"mode": "bogus", "channel": channel()}, {"mode": ["single"], "channel": channel()},
                 {"mode": "single", "channel": channel(key="")}, {"mode": "single", "channel": channel(key="  \n")},
                 {"mode": "batch", "channel": channel(key=None)}, {"mode": "single", "channel": "x"},
                 {"mode": "single", "channel": channel(key=["a", "b"])}):
        assert (await admin.call("POST", "/api/channel/", json=body))["success"] is False, body
    assert await m.Channel.all().count() == 5

    named = await admin.ok("POST", "/api/channel/", json={"mode": "batch", "batch_add_set_key_prefix_2_name": True,
                                                          "channel": channel(key=keys)})
    assert [(await m.Channel.get(id=i)).name for i in named] == ["main sk-key-a", "main sk-key-b", "main sk-key-c"]


async def test_batch_changes_reach_the_snapshot_together(gateway: GatewayServer, admin: AdminClient,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch add (one channel per key line) or a bulk delete is one change-feed write and one
    reload of all its channels, not one insert, signal and pull per channel."""
    snap = gateway.gateway.snapshot
    loads: list[list[int]] = []
    real = snap.load_channels

    async def load_channels(ids: list[int]) -> None:
        loads.append(sorted(ids))
        await real(ids)

    monkeypatch.setattr(snap, "load_channels", load_channels)
    before = await m.ChangeEvent.all().count()
    keys = "\n".join(f"sk-key-{i:08d}" for i in range(20))
    ids = await admin.ok("POST", "/api/channel/", json={"mode": "batch", "channel": channel(key=keys)})
    assert len(ids) == 20 and loads == [sorted(ids)]
    assert set(ids) <= set(snap.channels)
    events = await m.ChangeEvent.filter(id__gt=0).order_by("id").offset(before).values_list("kind", "ref_id")
    assert events == [("channel", i) for i in ids]

    loads.clear()
    assert await admin.ok("POST", "/api/channel/batch", json={"ids": ids[:15]}) == 15
    assert loads == [sorted(ids[:15])]
    assert not set(ids[:15]) & set(snap.channels) and set(ids[15:]) <= set(snap.channels)


async def test_list_filters_and_secrets(gateway: GatewayServer, admin: AdminClient) -> None:
    for i in range(12):
        await admin.ok("POST", "/api/channel/", json={"mode": "single", "channel": channel(
            name=f"c{i}", key=f"{SECRET}-{i}", type=14 if i % 3 == 0 else 1, priority=i,
            status=2 if i % 4 == 0 else 1)})
    data = await admin.ok("GET", "/api/channel/")
    assert set(data) == {"page", "page_size", "total", "items", "type_counts"}
    assert data["page"] == 1 and data["page_size"] == 10 and data["total"] == 12 and len(data["items"]) == 10
    assert [c["priority"] for c in data["items"]] == list(range(11, 1, -1))  # priority desc
    assert data["type_counts"] == {"1": 8, "14": 4}
    page2 = await admin.ok("GET", "/api/channel/", params={"p": 2})
    assert len(page2["items"]) == 2

    by_id = await admin.ok("GET", "/api/channel/", params={"id_sort": "true", "page_size": 100})
    ids = [c["id"] for c in by_id["items"]]
    assert ids == sorted(ids, reverse=True)

    enabled = await admin.ok("GET", "/api/channel/", params={"status": "enabled", "page_size": 100})
    assert enabled["total"] == 9 and all(c["status"] == 1 for c in enabled["items"])
    disabled = await admin.ok("GET", "/api/channel/", params={"status": "0", "page_size": 100})
    assert disabled["total"] == 3 and disabled["type_counts"] == {"1": 2, "14": 1}
    typed = await admin.ok("GET", "/api/channel/", params={"type": 14, "page_size": 100})
    assert typed["total"] == 4 and {c["type"] for c in typed["items"]} == {14}
    assert typed["type_counts"] == {"1": 8, "14": 4}  # type tabs ignore the type filter
    empty = await admin.ok("GET", "/api/channel/", params={"p": 99999})
    assert empty["items"] == [] and empty["total"] == 12
    for bad in ("abc", "99999999999999999999999"):
        assert (await admin.call("GET", "/api/channel/", params={"type": bad}))["success"] is False

    # no key in any list or get view
    async with httpx.AsyncClient(base_url=gateway.base_url, headers={"New-Api-User": str(admin.user_id)},
                                 cookies=admin.http.cookies) as http:
        for path in ("/api/channel/?page_size=100", f"/api/channel/{ids[0]}", "/api/channel/?status=0"):
            text = (await http.get(path)).text
            assert "sk-upstream" not in text and "enc:v1" not in text, path
    raw = await m.Channel.all().values_list("key_enc", flat=True)
    assert all(v.startswith("enc:v1:") and SECRET not in v for v in raw)


async def test_channel_type_and_input_errors(gateway: GatewayServer, admin: AdminClient) -> None:
    cid = await admin.ok("POST", "/api/channel/", json={"mode": "single", "channel": channel()})
    bad_fields = [
        {"priority": "5"}, {"priority": 1.5}, {"priority": True}, {"priority": 2**64}, {"weight": -1},
        {"weight": "heavy"}, {"type": "1"}, {"status": 9}, {"name": ["x"]}, {"name": {"a": 1}},
        {"name": "n" * 129}, {"models": 5}, {"models": [1, 2]}, {"group": {"g": 1}}, {"base_url": 3},
        {"model_mapping": "{not json"}, {"model_mapping": "[1]"}, {"model_mapping": 7}, {"setting": "1"},
        {"models": "m" * 256}, {"group": "g" * 65}, {"auto_ban": 5}, {"tag": 1}, {"key": 5},
    ]
    headers = {"New-Api-User": str(admin.user_id)}
    for fields in bad_fields:  # refused by the declared body: a 400 naming the field
        name = next(iter(fields))
        for method, payload in (("POST", {"mode": "single", "channel": channel(**fields)}),
                                ("PUT", {"id": cid, **fields})):
            resp = await admin.http.request(method, "/api/channel/", json=payload, headers=headers)
            assert resp.status_code == 400, (method, fields, resp.text)
            assert resp.json()["success"] is False and name in resp.json()["message"], (method, fields)
    assert await m.Channel.all().count() == 1
    row = await m.Channel.get(id=cid)
    assert row.priority == 0 and row.name == "main"

    # accepted conveniences: lists for models/group, objects for JSON columns, null for text
    await admin.ok("PUT", "/api/channel/", json={"id": cid, "models": ["a", "b"], "group": ["default"],
                                                 "model_mapping": {"a": "b"}, "tag": None, "remark": None,
                                                 "auto_ban": False, "priority": -3})
    row = await m.Channel.get(id=cid)
    assert (row.models, row.model_mapping, row.tag, row.remark, row.auto_ban, row.priority) == (
        "a,b", '{"a":"b"}', None, "", 0, -3)

    for body in ({}, {"id": "1"}, {"id": None}, {"id": -1}, {"id": 0}, {"id": 2**40}, {"id": [cid]},
                 {"id": True}):
        resp = await admin.http.put("/api/channel/", json=body, headers=headers)
        assert resp.status_code == 400 and "id" in resp.json()["message"], body
    for path in ("-1", "0", "abc", "99999999999999999999", "1.5"):
        for method in ("GET", "DELETE"):
            resp = await admin.http.request(method, f"/api/channel/{path}",
                                            headers={"New-Api-User": str(admin.user_id)})
            assert resp.status_code == 200 and resp.json()["success"] is False, (method, path)
    for raw in (b"{", b"null", b"[]", b'"x"', b"\xff"):
        for method in ("POST", "PUT"):
            resp = await admin.http.request(method, "/api/channel/", content=raw, headers=headers)
            assert resp.status_code == 400 and resp.json()["success"] is False, (method, raw)


async def test_channel_routes_need_admin(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.ok("POST", "/api/user/", json={"username": "user1", "password": "user1-pass"})
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        data = (await http.post("/api/user/login", json={"username": "user1", "password": "user1-pass"})).json()
        http.headers["New-Api-User"] = str(data["data"]["id"])
        cid = await admin.ok("POST", "/api/channel/", json={"mode": "single", "channel": channel()})
        for method, path, payload in (("GET", "/api/channel/", None), ("GET", f"/api/channel/{cid}", None),
                                      ("POST", "/api/channel/", {"mode": "single", "channel": channel()}),
                                      ("PUT", "/api/channel/", {"id": cid, "name": "x"}),
                                      ("DELETE", f"/api/channel/{cid}", None)):
            resp = await http.request(method, path, json=payload)
            assert resp.status_code == 200 and resp.json()["success"] is False, (method, path)
        assert await m.Channel.all().count() == 1


async def test_channel_changes_route_at_once(fake_openai, gateway: GatewayServer, admin: AdminClient,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    key = await admin.add_token(remain_quota=10_000_000)
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.APIStatusError) as err:
        await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    assert err.value.status_code == 404
    cid = await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o-mini", key=SECRET)
    await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    assert fake_openai.requests[-1]["headers"]["authorization"] == f"Bearer {SECRET}"
    await admin.ok("PUT", "/api/channel/", json={"id": cid, "status": 2})
    with pytest.raises(openai.APIStatusError) as err:
        await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    assert err.value.status_code == 404
    await admin.ok("PUT", "/api/channel/", json={"id": cid, "status": 1})
    await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    await admin.ok("DELETE", f"/api/channel/{cid}")
    with pytest.raises(openai.APIStatusError) as err:
        await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    assert err.value.status_code == 404 and "model_not_found" in err.value.response.text
    await client.close()
    gateway_lines = [r.getMessage() for r in caplog.records if not r.name.startswith(("openai", "httpx", "httpcore"))]
    assert gateway_lines and not [line for line in gateway_lines if SECRET in line or key[3:] in line]


async def test_the_web_ui_s_whole_channel_is_accepted(gateway: GatewayServer, admin: AdminClient) -> None:
    """new-api's edit form PUTs the channel it loaded (read-only columns included) with its
    own fields, and POSTs its form inside ``channel``: both are accepted, the extras ignored."""
    form = {**channel(), "id": 0, "openai_organization": "", "max_input_tokens": 0, "other": "", "model_mapping": "",
            "status_code_mapping": "", "auto_ban": 1, "test_model": "", "groups": ["default"], "priority": 0,
            "weight": 0, "token_limit": 0, "tag": "", "multi_key_mode": "random", "settings": "{}",
            "setting": '{"force_format":false,"proxy":""}', "param_override": "", "header_override": "",
            "remark": ""}
    cid = await admin.ok("POST", "/api/channel/", json={"mode": "single", "channel": form})
    loaded = await admin.ok("GET", f"/api/channel/{cid}")
    assert loaded["tag"] is None and loaded["test_model"] is None and loaded["setting"] == form["setting"]
    echoed = {**loaded, "name": "edited", "groups": loaded["group"].split(","), "multi_key_mode": "random",
              "max_input_tokens": 0, "token_limit": 0, "other_info": "", "settings": "{}", "need_reconcile": 0,
              "azure_responses_version": "", "balance": 1.5, "used_quota": 7, "created_time": 1,
              "channel_info": {**loaded["channel_info"], "is_multi_key": True}}
    del echoed["key"]  # the UI drops an empty key
    updated = await admin.ok("PUT", "/api/channel/", json=echoed)
    assert updated == {**loaded, "name": "edited"}  # read-only columns untouched
    row = await m.Channel.get(id=cid)
    assert gateway.gateway.box.decrypt(row.key_enc, f"channel:{cid}") == SECRET and row.channel_info == ""

    # anything else is a typo, named
    resp = await admin.http.put("/api/channel/", json={"id": cid, "colour": "red"},
                                headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and "colour" in resp.json()["message"]
    resp = await admin.http.post("/api/channel/", json={"mode": "single", "channel": {**channel(), "colour": 1}},
                                 headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and "channel.colour" in resp.json()["message"]
    assert await m.Channel.all().count() == 1
    bare = await admin.ok("POST", "/api/channel/", json={**channel(name="bare"), "mode": "single"})  # no wrapper
    assert (await m.Channel.get(id=bare)).name == "bare"


async def test_the_channel_bodies_are_documented(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        doc = (await http.get("/api/openapi.json")).json()
    operations = doc["paths"]["/api/channel/"]
    add = operations["post"]["requestBody"]["content"]["application/json"]["schema"]
    update = operations["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert add["title"] == "ChannelAdd" and update["title"] == "ChannelUpdate"
    assert add["additionalProperties"] is False and update["additionalProperties"] is False
    assert update["required"] == ["id"] and "mode" in add["properties"] and "key_mode" in update["properties"]
    props = update["properties"]
    assert props["status"]["anyOf"][0]["maximum"] == 3 and props["weight"]["anyOf"][0]["maximum"] == 2**31 - 1
    assert props["name"]["anyOf"][0]["maxLength"] == 128
    assert {"type": "object", "additionalProperties": True} in props["model_mapping"]["anyOf"][0]["anyOf"]
    for answer, title in ((operations["put"], "Ok[ChannelView]"), (operations["get"], "Ok[ChannelPage]")):
        assert answer["responses"]["200"]["content"]["application/json"]["schema"]["anyOf"][0]["title"] == title
