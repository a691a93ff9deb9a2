"""API keys ("tokens"): CRUD with new-api's contracts, masked keys in views, the
owner-only key reveal, search, malformed input, and changes reaching the relay."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Any

import httpx
import openai
import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer

MASK = re.compile(r"^[A-Za-z0-9]{4}\*{10}[A-Za-z0-9]{4}$")


async def second_user(gateway: GatewayServer, admin: AdminClient, name: str = "bob") -> httpx.AsyncClient:
    await admin.ok("POST", "/api/user/", json={"username": name, "password": f"{name}-password"})
    http = httpx.AsyncClient(base_url=gateway.base_url, timeout=30)
    body = (await http.post("/api/user/login", json={"username": name, "password": f"{name}-password"})).json()
    assert body["success"], body
    http.headers["New-Api-User"] = str(body["data"]["id"])
    return http


async def test_token_crud_and_reveal(gateway: GatewayServer, admin: AdminClient,
                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, the ORM's SQL included
    created = await admin.ok("POST", "/api/token/", json={"name": "ci", "remain_quota": 1000, "expired_time": -1,
                                                           "unlimited_quota": False, "model_limits_enabled": True,
                                                           "model_limits": "gpt-4o-mini", "allow_ips": ""})
    tid = created["id"]
    assert MASK.match(created["key"]), created["key"]
    assert created["name"] == "ci" and created["remain_quota"] == 1000 and created["status"] == 1

    revealed = await admin.ok("POST", f"/api/token/{tid}/key")
    full = revealed["key"]
    assert re.fullmatch(r"[A-Za-z0-9]{48}", full) and not full.startswith("sk-")
    assert created["key"] == full[:4] + "**********" + full[-4:]

    row = await m.Token.get(id=tid)
    assert full not in row.key_enc and row.key_enc.startswith("enc:v1:") and full not in row.key_hash

    listing = await admin.ok("GET", "/api/token/")
    assert listing["total"] == 1 and listing["items"][0]["key"] == created["key"]
    got = await admin.ok("GET", f"/api/token/{tid}")
    assert got["key"] == created["key"] and got["model_limits"] == "gpt-4o-mini"

    updated = await admin.ok("PUT", "/api/token/", json={"id": tid, "name": "renamed", "remain_quota": 5000})
    assert updated["name"] == "renamed" and updated["remain_quota"] == 5000 and updated["model_limits_enabled"]
    disabled = await admin.ok("PUT", "/api/token/?status_only=true", json={"id": tid, "status": 2,
                                                                            "name": "ignored"})
    assert disabled["status"] == 2 and disabled["name"] == "renamed"
    assert (await admin.ok("PUT", "/api/token/", json={"id": tid, "status": 1}))["status"] == 1
    assert (await admin.ok("POST", f"/api/token/{tid}/key"))["key"] == full  # the key never changes

    # an exhausted or expired key cannot be re-enabled
    await admin.ok("PUT", "/api/token/", json={"id": tid, "status": 2, "remain_quota": 0})
    assert (await admin.call("PUT", "/api/token/", json={"id": tid, "status": 1}))["success"] is False
    await admin.ok("PUT", "/api/token/", json={"id": tid, "status": 1, "remain_quota": 10})
    await m.Token.filter(id=tid).update(expired_time=int(time.time()) - 10, status=m.TOKEN_EXPIRED)
    assert (await admin.call("PUT", "/api/token/", json={"id": tid, "status": 1}))["success"] is False

    async with httpx.AsyncClient(base_url=gateway.base_url, cookies=admin.http.cookies,
                                 headers={"New-Api-User": str(admin.user_id)}) as http:
        for path in ("/api/token/", f"/api/token/{tid}", "/api/token/search?keyword=ren"):
            assert full not in (await http.get(path)).text

    await admin.ok("DELETE", f"/api/token/{tid}")
    assert (await admin.call("GET", f"/api/token/{tid}"))["success"] is False
    assert (await admin.call("DELETE", f"/api/token/{tid}"))["success"] is False
    assert (await admin.call("POST", f"/api/token/{tid}/key"))["success"] is False
    for text in (caplog.text, *(r.getMessage() for r in caplog.records)):
        assert full not in text


async def test_tokens_are_per_user(gateway: GatewayServer, admin: AdminClient) -> None:
    root_token = await admin.ok("POST", "/api/token/", json={"name": "root-key", "remain_quota": 1})
    bob = await second_user(gateway, admin)
    try:
        # another user can neither see, change, delete nor reveal root's key (200, success:false)
        for method, path, payload in (("GET", f"/api/token/{root_token['id']}", None),
                                      ("POST", f"/api/token/{root_token['id']}/key", None),
                                      ("PUT", "/api/token/", {"id": root_token["id"], "name": "pwned"}),
                                      ("DELETE", f"/api/token/{root_token['id']}", None)):
            resp = await bob.request(method, path, json=payload)
            assert resp.status_code == 200 and resp.json()["success"] is False, (method, path)
        listing = (await bob.get("/api/token/")).json()["data"]
        assert listing["total"] == 0 and listing["items"] == []

        mine = (await bob.post("/api/token/", json={"name": "bob-key", "remain_quota": 10})).json()["data"]
        assert mine["user_id"] != root_token["user_id"]
        bob_key = (await bob.post(f"/api/token/{mine['id']}/key")).json()["data"]["key"]
        assert len(bob_key) == 48
        assert (await admin.call("POST", f"/api/token/{mine['id']}/key"))["success"] is False  # not even root
        assert (await admin.ok("GET", "/api/token/"))["total"] == 1
        assert (await m.Token.get(id=root_token["id"])).name == "root-key"
    finally:
        await bob.aclose()


async def test_token_search(gateway: GatewayServer, admin: AdminClient) -> None:
    keys = {}
    for name in ("alpha-one", "alpha-two", "beta"):
        data = await admin.ok("POST", "/api/token/", json={"name": name, "remain_quota": 1})
        keys[name] = (await admin.ok("POST", f"/api/token/{data['id']}/key"))["key"]
    found = await admin.ok("GET", "/api/token/search", params={"keyword": "alpha"})
    assert sorted(t["name"] for t in found["items"]) == ["alpha-one", "alpha-two"] and found["total"] == 2
    assert all(MASK.match(t["key"]) for t in found["items"])
    exact = await admin.ok("GET", "/api/token/search", params={"token": "sk-" + keys["beta"]})
    assert [t["name"] for t in exact["items"]] == ["beta"]
    tail = await admin.ok("GET", "/api/token/search", params={"token": keys["beta"][-4:]})
    assert "beta" in [t["name"] for t in tail["items"]]
    none = await admin.ok("GET", "/api/token/search", params={"keyword": "gamma"})
    assert none["items"] == [] and none["total"] == 0
    everything = await admin.ok("GET", "/api/token/search")
    assert everything["total"] == 3
    assert (await admin.call("GET", "/api/token/search", params={"keyword": "x" * 200}))["success"] is False
    for odd in ("%", "%%%", "_", "'; drop table tokens; --"):
        assert (await admin.ok("GET", "/api/token/search", params={"keyword": odd}))["total"] == 0


async def test_token_input_errors(gateway: GatewayServer, admin: AdminClient) -> None:
    tid = (await admin.ok("POST", "/api/token/", json={"name": "ok", "remain_quota": 1}))["id"]
    bad = [
        {"name": ["x"]}, {"name": "n" * 51}, {"name": 5}, {"remain_quota": "100"}, {"remain_quota": -1},
        {"remain_quota": 1.5}, {"remain_quota": 10**30}, {"expired_time": "never"}, {"expired_time": -2},
        {"expired_time": 2**70}, {"unlimited_quota": "false"}, {"unlimited_quota": 1}, {"model_limits": ["a"]},
        {"allow_ips": 1}, {"group": {"g": 1}}, {"group": "g" * 65}, {"status": "2"}, {"status": 9},
        {"model_limits_enabled": "yes"}, {"cross_group_retry": []},
    ]
    headers = {"New-Api-User": str(admin.user_id)}
    for fields in bad:  # a malformed body is a 400 naming the field
        for method, base in (("POST", {"name": "n"}), ("PUT", {"id": tid})):
            resp = await admin.http.request(method, "/api/token/", json={**base, **fields}, headers=headers)
            assert resp.status_code == 400 and resp.json()["success"] is False, (method, fields)
            assert next(iter(fields)) in resp.json()["message"], (method, fields, resp.json())
    assert (await admin.call("POST", "/api/token/", json={"name": "past", "expired_time": 1000}))["success"] is False
    assert await m.Token.all().count() == 1
    assert (await m.Token.get(id=tid)).name == "ok"

    for body in ({}, {"id": "1"}, {"id": None}, {"id": -5}, {"id": 2**40}, {"id": [tid]}, {"id": 1.0}):
        assert (await admin.call("PUT", "/api/token/", json=body))["success"] is False, body
    for path in ("-1", "0", "abc", "99999999999999999999"):
        for method, suffix in (("GET", ""), ("DELETE", ""), ("POST", "/key")):
            resp = await admin.http.request(method, f"/api/token/{path}{suffix}",
                                            headers={"New-Api-User": str(admin.user_id)})
            assert resp.status_code == 200 and resp.json()["success"] is False, (method, path)
    for raw in (b"{", b"null", b"[]", b"42", b"\xff\xfe"):
        for method in ("POST", "PUT"):
            resp = await admin.http.request(method, "/api/token/", content=raw,
                                            headers={"New-Api-User": str(admin.user_id)})
            assert resp.status_code == 400 and resp.json()["success"] is False, (method, raw)

    # a missing body or fields gives defaults (new-api: zero values), never a 500
    empty = await admin.ok("POST", "/api/token/", json={})
    assert empty["name"] == "" and empty["remain_quota"] == 0 and empty["expired_time"] == -1


async def test_token_status_reaches_relay(fake_openai, gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o-mini")
    data = await admin.ok("POST", "/api/token/", json={"name": "t", "remain_quota": 10_000_000})
    key = "sk-" + (await admin.ok("POST", f"/api/token/{data['id']}/key"))["key"]
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
    messages = [{"role": "user", "content": "hi"}]
    await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    # quota leased by the worker is still the owner's: views show the whole balance, and agree
    assert await m.QuotaLease.filter(kind="token", ref_id=data["id"]).exists()
    for _ in range(50):  # settle a flush that may land between the two reads
        one = (await admin.ok("GET", f"/api/token/{data['id']}"))["remain_quota"]
        listed = (await admin.ok("GET", "/api/token/"))["items"][0]["remain_quota"]
        if one == listed:
            break
        await asyncio.sleep(0.02)
    assert one == listed and 9_900_000 < one <= 10_000_000
    await admin.ok("PUT", "/api/token/?status_only=true", json={"id": data["id"], "status": 2})
    with pytest.raises(openai.AuthenticationError):
        await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    await admin.ok("PUT", "/api/token/?status_only=true", json={"id": data["id"], "status": 1})
    await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    await admin.ok("DELETE", f"/api/token/{data['id']}")
    with pytest.raises(openai.AuthenticationError):
        await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    await client.close()


async def test_batch_delete_and_reveal_touch_only_own_keys(gateway, admin):
    from faregate.testing.harness import ROOT_PASSWORD, AdminClient

    mine = [(await admin.ok("POST", "/api/token/", json={"name": f"k{i}", "expired_time": -1}))["id"]
            for i in range(3)]
    await admin.ok("POST", "/api/user/", json={"username": "mallory", "password": ROOT_PASSWORD})
    mallory = AdminClient(gateway.base_url)
    mallory.user_id = (await mallory.ok("POST", "/api/user/login",
                                        json={"username": "mallory", "password": ROOT_PASSWORD}))["id"]
    assert (await mallory.ok("POST", "/api/token/batch/keys", json={"ids": mine}))["keys"] == {}
    assert await mallory.ok("POST", "/api/token/batch", json={"ids": mine}) == 0
    keys = (await admin.ok("POST", "/api/token/batch/keys", json={"ids": mine[:2]}))["keys"]
    assert set(keys) == {str(i) for i in mine[:2]} and all(len(k) == 48 for k in keys.values())
    assert await admin.ok("POST", "/api/token/batch", json={"ids": mine[:2]}) == 2
    assert (await admin.call("POST", "/api/token/batch", json={"ids": list(range(1, 102))}))["success"] is False
    await mallory.close()


async def test_a_keys_quota_set_while_a_worker_leases_from_it_adds_up(gateway: GatewayServer, admin: AdminClient,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner sets a key's quota (a total: what the key holds plus what workers lease of it)
    while a worker takes a lease from it (a request in flight): the total is what was asked.
    Setting the column to the total less a lease read apart created the new lease's quota."""
    from faregate.testing.interleave import after_select

    data = await admin.ok("POST", "/api/token/", json={"name": "leased", "remain_quota": 1_000_000})
    ledger = gateway.gateway.ledger
    owner = (await admin.ok("GET", "/api/user/self"))["id"]
    # a worker leases from the key right after the update reads the leases (the second read
    # holding them: the first is the key's, with its leases, to check the update)
    leases = after_select(monkeypatch, lambda: ledger.reserve(owner, data["id"], 100), containing="quota_leases",
                          skip=1)
    await admin.ok("PUT", "/api/token/", json={"id": data["id"], "name": "leased", "remain_quota": 5_000_000})
    monkeypatch.undo()
    assert not leases, "the lease was taken during the update"
    assert await m.QuotaLease.filter(kind="token", ref_id=data["id"]).exists()
    assert (await admin.ok("GET", f"/api/token/{data['id']}"))["remain_quota"] == 5_000_000


#: a view of a key's balance, the body a PUT sends, and how many reads of the key's row come
#: before the one it shows (a PUT's: its own before the write, the change feed's reload)
TOKEN_VIEWS = [
    ("GET", "/api/token/", None, 0),
    ("GET", "/api/token/search?keyword=leased", None, 0),
    ("GET", "/api/token/{id}", None, 0),
    ("PUT", "/api/token/", {"name": "leased"}, 2),
]


@pytest.mark.parametrize(("method", "path", "body", "reads_before"), TOKEN_VIEWS,
                         ids=[f"{method} {path}" for method, path, _, _ in TOKEN_VIEWS])
async def test_a_keys_view_reads_its_quota_and_its_leases_at_one_instant(
        gateway: GatewayServer, admin: AdminClient, monkeypatch: pytest.MonkeyPatch,
        method: str, path: str, body: dict[str, Any] | None, reads_before: int) -> None:
    """A worker takes a lease out of a key's quota right after the view reads the key's row:
    the quota shown (the row's and the leases' together) is still what the key was given.
    Read apart, the leases read after the row counted the new lease's quota twice."""
    from faregate.testing.interleave import after_select

    key = await admin.ok("POST", "/api/token/", json={"name": "leased", "remain_quota": 1_000_000})
    ledger = gateway.gateway.ledger
    owner = admin.user_id
    assert owner is not None
    # after the earlier reads of the row (a PUT's own, the change feed's reload)
    leases = after_select(monkeypatch, lambda: ledger.reserve(owner, key["id"], 100), containing="remain_quota",
                          skip=reads_before)
    json = None if body is None else {**body, "id": key["id"]}
    data = await admin.ok(method, path.format(id=key["id"]), json=json)
    monkeypatch.undo()
    assert not leases, "the lease was taken during the request"
    assert await m.QuotaLease.filter(kind="token", ref_id=key["id"]).exists()
    shown = next(t for t in data["items"] if t["id"] == key["id"]) if "items" in data else data
    assert shown["remain_quota"] == 1_000_000


async def test_a_key_whose_quota_a_flush_gives_back_meanwhile_is_enabled(
        gateway: GatewayServer, admin: AdminClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disabled key whose whole quota a worker holds leased and unused is enabled while the
    worker's flush gives the lease back to the key: its quota never ran out. Read apart, the key
    (0 left in its row) before the flush and its leases (none left) after: "used up"."""
    from faregate.testing.interleave import after_select

    key = await admin.ok("POST", "/api/token/", json={"name": "leased", "remain_quota": 10_000})
    ledger = gateway.gateway.ledger
    assert admin.user_id is not None
    assert (await ledger.reserve(admin.user_id, key["id"], 10_000)).refund()  # leased whole, unused
    assert (await m.Token.get(id=key["id"])).remain_quota == 0
    await admin.ok("PUT", "/api/token/?status_only=1", json={"id": key["id"], "status": m.TOKEN_DISABLED})
    flushes = after_select(monkeypatch, lambda: ledger.flush(return_all=True), containing="remain_quota")
    enabled = await admin.ok("PUT", "/api/token/?status_only=1", json={"id": key["id"], "status": m.TOKEN_ENABLED})
    monkeypatch.undo()
    assert not flushes, "the flush ran during the update"
    assert (await m.Token.get(id=key["id"])).remain_quota == 10_000  # given back
    assert enabled["status"] == m.TOKEN_ENABLED and enabled["remain_quota"] == 10_000
