"""First-run setup, login/logout/self, access tokens, the auth envelope and the
admin's user list/creation (new-api's contracts)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer


async def envelope(resp: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert isinstance(body.get("success"), bool) and isinstance(body.get("message"), str), body
    return body


async def login(base_url: str, username: str, password: str) -> tuple[httpx.AsyncClient, int]:
    client = httpx.AsyncClient(base_url=base_url, timeout=30)
    body = await envelope(await client.post("/api/user/login", json={"username": username, "password": password}))
    assert body["success"], body
    client.headers["New-Api-User"] = str(body["data"]["id"])
    return client, body["data"]["id"]


# -- setup -------------------------------------------------------------------------------
async def test_setup_first_run_then_refused(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        status = (await envelope(await http.get("/api/setup")))["data"]
        assert status == {"status": False, "root_init": False, "database_type": status["database_type"]}
        # no default password: nobody can log in before setup
        for pw in ("123456", "root", ""):
            body = await envelope(await http.post("/api/user/login", json={"username": "root", "password": pw}))
            assert body["success"] is False

        # a malformed body is a 400 naming the field; two passwords that differ are new-api's 200 refusal
        bad = [
            ({"username": "root", "password": "short", "confirmPassword": "short"}, 400),
            ({"username": "root", "password": "longenough1", "confirmPassword": "different11"}, 200),
            ({"username": "root", "password": "longenough1", "confirmPassword": None}, 200),  # given: must match
            ({"username": "root", "password": "x" * 65, "confirmPassword": "x" * 65}, 400),
            ({"username": "r" * 21, "password": "longenough1", "confirmPassword": "longenough1"}, 400),
            ({"username": ["root"], "password": "longenough1", "confirmPassword": "longenough1"}, 400),
            ({"username": "root", "password": 12345678, "confirmPassword": 12345678}, 400),
            ({"username": "root", "password": "longenough1", "confirmPassword": "longenough1",
              "SelfUseModeEnabled": "yes"}, 400),
        ]
        for payload, code in bad:
            body = await envelope(await http.post("/api/setup", json=payload), code)
            assert body["success"] is False, payload
        for raw in (b"{not json", b"[1,2]", b"\xff\xfe"):
            body = await envelope(await http.post("/api/setup", content=raw), 400)
            assert body["success"] is False
        assert not await m.User.exists()

        good = {"username": "boss", "password": "longenough1",
                "SelfUseModeEnabled": True}
        rival = {**good, "username": "rival"}
        answers = await asyncio.gather(http.post("/api/setup", json=good), http.post("/api/setup", json=rival))
        assert sorted([(await envelope(a))["success"] for a in answers]) == [False, True]  # one root only
        status = (await envelope(await http.get("/api/setup")))["data"]
        assert status["status"] is True and status["root_init"] is True
        root = await m.User.get(role=m.ROLE_ROOT)
        assert root.username in ("boss", "rival") and root.quota == 100_000_000
        assert "longenough1" not in root.password_hash
        assert (await envelope(await http.get("/api/status")))["data"]["self_use_mode_enabled"] is True

        again = {"username": "evil", "password": "anotherpass", "confirmPassword": "anotherpass"}
        assert (await envelope(await http.post("/api/setup", json=again)))["success"] is False
        assert await m.User.filter(role=m.ROLE_ROOT).count() == 1


# -- login, logout, self -----------------------------------------------------------------
async def test_login_self_logout(gateway: GatewayServer, admin: AdminClient) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        body = await envelope(await http.post("/api/user/login", json={"username": "root", "password": "wrong-pw"}))
        assert body["success"] is False and "data" not in body
        for payload, code in (({}, 200), ({"username": "root"}, 200),
                              ({"username": ["root"], "password": ROOT_PASSWORD}, 400),
                              ({"username": "root", "password": None}, 400)):
            assert (await envelope(await http.post("/api/user/login", json=payload), code))["success"] is False
        assert (await envelope(await http.post("/api/user/login", content=b"nope"), 400))["success"] is False

        body = await envelope(await http.post("/api/user/login",
                                              json={"username": "root", "password": ROOT_PASSWORD}))
        assert body["success"] is True
        assert set(body["data"]) == {"id", "username", "display_name", "role", "status", "group"}
        assert body["data"]["role"] == m.ROLE_ROOT and body["data"]["username"] == "root"
        uid = body["data"]["id"]
        cookie = http.cookies.get("session")
        assert cookie

        # the session alone is not enough: New-Api-User must name the same user
        assert (await envelope(await http.get("/api/user/self"), 401))["success"] is False
        for bad in ("abc", "1.5", "", str(uid + 1), "99999999999999999999999"):
            await envelope(await http.get("/api/user/self", headers={"New-Api-User": bad}), 401)
        me = (await envelope(await http.get("/api/user/self", headers={"New-Api-User": str(uid)})))["data"]
        assert me["id"] == uid and me["role"] == m.ROLE_ROOT
        assert "password" not in me and "password_hash" not in me and "access_token" not in me

        assert (await envelope(await http.get("/api/user/logout")))["success"] is True
        await envelope(await http.get("/api/user/self", headers={"New-Api-User": str(uid)}), 401)


async def test_not_logged_in_is_401(gateway: GatewayServer, admin: AdminClient) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        for method, path in (("GET", "/api/user/self"), ("GET", "/api/channel/"), ("POST", "/api/channel/"),
                             ("GET", "/api/token/"), ("POST", "/api/token/"), ("GET", "/api/user/token"),
                             ("POST", "/api/token/1/key"), ("GET", "/api/user/")):
            body = await envelope(await http.request(method, path, headers={"New-Api-User": "1"}), 401)
            assert body["success"] is False


# -- access tokens -------------------------------------------------------------------------
async def test_access_token(gateway: GatewayServer, admin: AdminClient) -> None:
    first = await admin.ok("GET", "/api/user/token")
    second = await admin.ok("GET", "/api/user/token")
    assert isinstance(first, str) and len(first) >= 29 and first != second
    uid = str(admin.user_id)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:  # no cookie
        for auth in (second, f"Bearer {second}", f"bearer {second}"):
            body = await envelope(await http.get("/api/user/self",
                                                 headers={"Authorization": auth, "New-Api-User": uid}))
            assert body["success"] and body["data"]["username"] == "root"
        # each call replaces the previous token: the first no longer works (200, success:false)
        body = await envelope(await http.get("/api/user/self", headers={"Authorization": first,
                                                                        "New-Api-User": uid}))
        assert body["success"] is False
        # the header is still required, and must match
        await envelope(await http.get("/api/user/self", headers={"Authorization": second}), 401)
        await envelope(await http.get("/api/user/self", headers={"Authorization": second, "New-Api-User": "x"}),
                       401)
        await envelope(await http.get("/api/user/self", headers={"Authorization": second,
                                                                 "New-Api-User": str(int(uid) + 7)}), 401)
        # relay keys are not management credentials
        key = await admin.add_token()
        body = await envelope(await http.get("/api/user/self", headers={"Authorization": f"Bearer {key}",
                                                                        "New-Api-User": uid}))
        assert body["success"] is False
        # admin routes work with the access token
        body = await envelope(await http.get("/api/channel/", headers={"Authorization": second,
                                                                       "New-Api-User": uid}))
        assert body["success"] is True


# -- users (admin) ----------------------------------------------------------------------
async def test_create_and_list_users(gateway: GatewayServer, admin: AdminClient) -> None:
    created = await admin.ok("POST", "/api/user/", json={"username": "alice", "password": "alice-pass",
                                                          "display_name": "Alice"})
    assert created["role"] == m.ROLE_USER and created["display_name"] == "Alice"
    assert "password" not in created and "password_hash" not in created
    admin_user = await admin.ok("POST", "/api/user/", json={"username": "ops", "password": "ops-pass1",
                                                             "role": m.ROLE_ADMIN})
    assert admin_user["role"] == m.ROLE_ADMIN and admin_user["display_name"] == "ops"

    bad = [
        {"username": "alice", "password": "another-pass"},  # taken
        {"username": "", "password": "another-pass"},
        {"username": "bob"},
        {"username": "bob", "password": "short"},
        {"username": "bob", "password": "long-enough", "role": m.ROLE_ROOT},  # not below root's own role
        {"username": "bob", "password": "long-enough", "role": 55},
        {"username": "bob", "password": "long-enough", "role": "1"},
        {"username": "b" * 21, "password": "long-enough"},
        {"username": {"x": 1}, "password": "long-enough"},
        {"username": "bob", "password": ["long-enough"]},
        {"username": "bob", "password": "long-enough", "display_name": 7},
    ]
    for payload in bad:
        assert (await admin.call("POST", "/api/user/", json=payload))["success"] is False, payload
    assert (await admin.call("POST", "/api/user/", content=b"{bad"))["success"] is False

    # users may log in; a common user may not reach admin routes (200, success:false)
    alice, alice_id = await login(gateway.base_url, "alice", "alice-pass")
    ops, _ = await login(gateway.base_url, "ops", "ops-pass1")
    try:
        assert (await envelope(await alice.get("/api/user/self")))["data"]["id"] == alice_id
        for method, path in (("GET", "/api/user/"), ("GET", "/api/channel/"), ("POST", "/api/user/"),
                             ("GET", f"/api/user/{alice_id}")):
            body = await envelope(await alice.request(method, path, json={}))
            assert body["success"] is False, path
        # an admin cannot create another admin (role must be below the caller's)
        body = await envelope(await ops.post("/api/user/", json={"username": "ops2", "password": "ops-pass2",
                                                                  "role": m.ROLE_ADMIN}))
        assert body["success"] is False
        body = await envelope(await ops.post("/api/user/", json={"username": "carol", "password": "carol-pass"}))
        assert body["success"] is True
        # an admin cannot look at root
        root = await envelope(await ops.get(f"/api/user/{admin.user_id}"))
        assert root["success"] is False
    finally:
        await alice.aclose()
        await ops.aclose()

    listing = await admin.ok("GET", "/api/user/", params={"p": 1, "page_size": 2})
    assert listing["total"] == 4 and listing["page"] == 1 and listing["page_size"] == 2
    assert [u["username"] for u in listing["items"]] == ["carol", "ops"]  # id desc
    page2 = await admin.ok("GET", "/api/user/", params={"p": 2, "page_size": 2})
    assert [u["username"] for u in page2["items"]] == ["alice", "root"]
    for user in listing["items"] + page2["items"]:
        assert "password" not in user and "password_hash" not in user and "access_token" not in user
    assert (await admin.ok("GET", f"/api/user/{alice_id}"))["username"] == "alice"
    for bad_id in ("0", "-1", "abc", "99999999999999999999", "9999"):
        assert (await admin.call("GET", f"/api/user/{bad_id}"))["success"] is False


PAGING_CASES = [
    ({}, 1, 10),
    ({"p": "2", "page_size": "3"}, 2, 3),
    ({"ps": "4"}, 1, 4),
    ({"size": "5"}, 1, 5),
    ({"page_size": "0", "ps": "6"}, 1, 6),
    ({"page_size": "1000"}, 1, 100),
    ({"page_size": "-5"}, 1, 10),
    ({"p": "-3", "page_size": "abc"}, 1, 10),
    ({"p": "99999999999999999999999999"}, 10_000_000, 10),
    ({"p": "1e3", "page_size": "2.5"}, 1, 10),
]


async def test_paging_params(gateway: GatewayServer, admin: AdminClient) -> None:
    for query, page, size in PAGING_CASES:
        for path in ("/api/user/", "/api/token/", "/api/channel/", "/api/token/search"):
            data = await admin.ok("GET", path, params=query)
            assert (data["page"], data["page_size"]) == (page, size), (path, query)
            assert isinstance(data["items"], list) and isinstance(data["total"], int)
