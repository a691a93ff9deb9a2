"""Multi-key channels (issue 10, channels): added in multi_to_single mode with their
rotation, keys listed masked, disabled, enabled and deleted through
``/api/channel/multi_key/manage`` (the encrypted key text rewritten, states re-indexed),
appended or replaced on update; the relay sends only enabled keys, in turn when polling."""

from __future__ import annotations

import collections
import json
import logging
from typing import Any

import openai
import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

KEYS = ["sk-multi-key-AAAA-0123456789abcdef", "sk-multi-key-BBBB-0123456789abcdef",
        "sk-multi-key-CCCC-0123456789abcdef"]
MANAGE = "/api/channel/multi_key/manage"


async def _add(admin: AdminClient, base_url: str, keys: list[str], mode: str = "random", **fields: Any) -> int:
    channel = {"type": 1, "key": "\n".join(keys), "name": "multi", "base_url": base_url, "models": "gpt-4o-mini",
               "group": "default", **fields}
    channel_id: int = await admin.ok("POST", "/api/channel/", json={"mode": "multi_to_single",
                                                                    "multi_key_mode": mode, "channel": channel})
    return channel_id


async def _manage(admin: AdminClient, channel_id: int, action: str, **fields: Any) -> dict[str, Any]:
    return await admin.call("POST", MANAGE, json={"channel_id": channel_id, "action": action, **fields})


def _stored(gateway: GatewayServer, row: m.Channel) -> list[str]:
    return str(gateway.gateway.box.decrypt(row.key_enc, f"channel:{row.id}")).split("\n")


async def test_multi_key_channel_is_managed_key_by_key(gateway: GatewayServer, admin: AdminClient,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    cid = await _add(admin, "http://127.0.0.1:9", [*KEYS, KEYS[0], "  "], mode="polling")
    row = await m.Channel.get(id=cid)
    info = json.loads(row.channel_info)
    assert info["is_multi_key"] is True and info["multi_key_size"] == 3 and info["multi_key_mode"] == "polling"
    assert _stored(gateway, row) == KEYS  # repeats and blank lines dropped
    view = await admin.ok("GET", f"/api/channel/{cid}")
    assert view["key"] == "" and view["channel_info"]["is_multi_key"] is True
    assert view["channel_info"]["multi_key_mode"] == "polling"

    status = await _manage(admin, cid, "get_key_status")
    data = status["data"]
    assert [k["index"] for k in data["keys"]] == [0, 1, 2] and {k["status"] for k in data["keys"]} == {1}
    assert (data["total"], data["enabled_count"], data["page"], data["total_pages"]) == (3, 3, 1, 1)
    previews = [k["key_preview"] for k in data["keys"]]
    assert all(p.startswith("sk-multi") and len(p.replace(".", "")) < len(KEYS[0]) // 2 for p in previews)

    assert (await _manage(admin, cid, "disable_key", key_index=1))["success"] is True
    entry = gateway.gateway.snapshot.channels[cid]
    assert entry.keys == [KEYS[0], KEYS[2]] and entry.key_mode == "polling"
    disabled = (await _manage(admin, cid, "get_key_status", status=2))["data"]
    assert [k["index"] for k in disabled["keys"]] == [1] and disabled["keys"][0]["disabled_time"] > 0
    assert disabled["manual_disabled_count"] == 1 and disabled["enabled_count"] == 2
    paged = (await _manage(admin, cid, "get_key_status", page=2, page_size=2))["data"]
    assert [k["index"] for k in paged["keys"]] == [2] and paged["total_pages"] == 2

    assert (await _manage(admin, cid, "disable_all_keys"))["data"] == 2
    entry = gateway.gateway.snapshot.channels[cid]
    assert entry.keys == [] and entry.status == m.CHANNEL_AUTO_DISABLED  # not routable
    assert gateway.gateway.snapshot.levels("default", "gpt-4o-mini") == []
    assert (await _manage(admin, cid, "disable_all_keys"))["success"] is False
    assert (await _manage(admin, cid, "enable_all_keys"))["data"] == 3
    assert gateway.gateway.snapshot.channels[cid].keys == KEYS
    assert gateway.gateway.snapshot.levels("default", "gpt-4o-mini") != []

    # delete_key rewrites the key text and moves later states down one index
    await _manage(admin, cid, "disable_key", key_index=2)
    assert (await _manage(admin, cid, "delete_key", key_index=0))["success"] is True
    row = await m.Channel.get(id=cid)
    assert _stored(gateway, row) == KEYS[1:]
    info = json.loads(row.channel_info)
    assert info["multi_key_size"] == 2 and info["multi_key_status_list"] == {"1": 2}
    assert gateway.gateway.snapshot.channels[cid].keys == [KEYS[1]]

    # delete_disabled_keys removes the automatically disabled ones (status 3), as new-api's
    info["multi_key_status_list"] = {"0": 3, "1": 3}
    await m.Channel.filter(id=cid).update(channel_info=json.dumps(info))
    assert (await _manage(admin, cid, "delete_disabled_keys"))["success"] is False  # every key would go
    info["multi_key_status_list"] = {"0": 3, "1": 2}
    await m.Channel.filter(id=cid).update(channel_info=json.dumps(info))
    assert (await _manage(admin, cid, "delete_disabled_keys"))["data"] == 1
    row = await m.Channel.get(id=cid)
    assert _stored(gateway, row) == [KEYS[2]] and json.loads(row.channel_info)["multi_key_status_list"] == {"0": 2}
    assert (await _manage(admin, cid, "delete_disabled_keys"))["success"] is False
    assert (await _manage(admin, cid, "delete_key", key_index=0))["success"] is False  # the last key stays

    # no key in any answer or log line
    for path in (f"/api/channel/{cid}", "/api/channel/"):
        text = json.dumps(await admin.call("GET", path))
        assert not any(k in text for k in KEYS)
    for text in (caplog.text, *(r.getMessage() for r in caplog.records)):
        assert not any(k in text for k in KEYS)


async def test_manage_refuses_bad_requests(gateway: GatewayServer, admin: AdminClient) -> None:
    cid = await _add(admin, "http://127.0.0.1:9", KEYS[:2])
    single = await admin.add_channel(base_url="http://127.0.0.1:9", models="gpt-4o-mini")
    for body in ({"channel_id": cid, "action": "explode"}, {"channel_id": cid}, {"channel_id": "1", "action": "x"},
                 {"channel_id": cid, "action": "disable_key", "key_index": -1},
                 {"channel_id": cid, "action": "get_key_status", "status": 7},
                 {"channel_id": cid, "action": "get_key_status", "colour": "red"}):
        resp = await admin.http.post(MANAGE, json=body, headers={"New-Api-User": str(admin.user_id)})
        assert resp.status_code == 400 and resp.json()["success"] is False, body
    for action, fields in (("disable_key", {}), ("disable_key", {"key_index": 2}), ("enable_key", {"key_index": 9})):
        answer = await _manage(admin, cid, action, **fields)
        assert answer["success"] is False and "key_index" in answer["message"], (action, fields)
    assert "not a multi-key" in (await _manage(admin, single, "get_key_status"))["message"]
    assert "not found" in (await _manage(admin, 99999, "get_key_status"))["message"]
    for bad in ({"multi_key_mode": "roundrobin"}, {"multi_key_mode": 1}):
        body = {"mode": "multi_to_single", "channel": {"type": 1, "key": "a\nb", "models": "m"}, **bad}
        resp = await admin.http.post("/api/channel/", json=body, headers={"New-Api-User": str(admin.user_id)})
        assert resp.status_code == 400 and "multi_key_mode" in resp.json()["message"]


async def test_update_appends_or_replaces_keys(gateway: GatewayServer, admin: AdminClient) -> None:
    cid = await _add(admin, "http://127.0.0.1:9", KEYS[:2])
    await _manage(admin, cid, "disable_key", key_index=1)
    await admin.ok("PUT", "/api/channel/", json={"id": cid, "key": f"{KEYS[1]}\n{KEYS[2]}", "key_mode": "append",
                                                 "multi_key_mode": "polling", "channel_info": {"is_multi_key": False}})
    row = await m.Channel.get(id=cid)
    info = json.loads(row.channel_info)
    assert _stored(gateway, row) == KEYS and info["multi_key_size"] == 3
    assert info["multi_key_status_list"] == {"1": 2} and info["multi_key_mode"] == "polling"
    await admin.ok("PUT", "/api/channel/", json={"id": cid, "name": "renamed", "key": ""})  # keys kept
    assert _stored(gateway, await m.Channel.get(id=cid)) == KEYS
    await admin.ok("PUT", "/api/channel/", json={"id": cid, "key": "sk-new-key-1111\nsk-new-key-2222",
                                                 "key_mode": "replace"})
    row = await m.Channel.get(id=cid)
    info = json.loads(row.channel_info)
    assert _stored(gateway, row) == ["sk-new-key-1111", "sk-new-key-2222"]
    assert info["multi_key_size"] == 2 and info["multi_key_status_list"] == {}
    assert gateway.gateway.snapshot.channels[cid].keys == ["sk-new-key-1111", "sk-new-key-2222"]
    for bad in ({"key_mode": "merge"}, {"multi_key_mode": "sometimes"}):
        resp = await admin.http.put("/api/channel/", json={"id": cid, "key": "x", **bad},
                                    headers={"New-Api-User": str(admin.user_id)})
        assert resp.status_code == 400 and next(iter(bad)) in resp.json()["message"], bad
    assert _stored(gateway, await m.Channel.get(id=cid)) == ["sk-new-key-1111", "sk-new-key-2222"]


async def test_relay_sends_only_enabled_keys_in_turn(gateway: GatewayServer, admin: AdminClient,
                                                     fake_openai: FakeOpenAI) -> None:
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0)
    messages = [{"role": "user", "content": "hi"}]

    async def sent(n: int) -> list[str]:
        before = len(fake_openai.requests)
        for _ in range(n):
            await client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
        return [r["headers"]["authorization"].removeprefix("Bearer ") for r in fake_openai.requests[before:]]

    random_id = await _add(admin, fake_openai.base_url, KEYS[:2])
    await _manage(admin, random_id, "disable_key", key_index=0)
    assert set(await sent(12)) == {KEYS[1]}  # the disabled key never goes upstream
    await _manage(admin, random_id, "disable_key", key_index=1)  # no enabled key: not routable
    with pytest.raises(openai.APIStatusError):
        await sent(1)

    polling = await _add(admin, fake_openai.base_url, KEYS, mode="polling")
    used = await sent(6)
    assert used[:3] == KEYS and used[3:] == KEYS  # round-robin
    await _manage(admin, polling, "disable_key", key_index=1)
    assert collections.Counter(await sent(4)) == {KEYS[0]: 2, KEYS[2]: 2}
    await client.close()


async def test_random_mode_spreads_over_the_enabled_keys(gateway: GatewayServer, admin: AdminClient,
                                                         fake_openai: FakeOpenAI) -> None:
    """new-api's random mode picks among the enabled keys each time: every one of them is
    used, the disabled one never (24 draws of two miss one with a chance of 2 in 16 million)."""
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0)
    channel_id = await _add(admin, fake_openai.base_url, KEYS)
    await _manage(admin, channel_id, "disable_key", key_index=1)
    for _ in range(24):
        await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    used = collections.Counter(r["headers"]["authorization"].removeprefix("Bearer ") for r in fake_openai.requests)
    assert set(used) == {KEYS[0], KEYS[2]} and sum(used.values()) == 24
    await client.close()
