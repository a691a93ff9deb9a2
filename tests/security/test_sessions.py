"""Login sessions (issue 16): a login always starts a fresh session, so a cookie planted
before it never becomes a login (fixation); a password change ends every other session of
the user, on every worker and node at once (the session version travels with the change
feed), and keeps the changer's own, re-issued; a role change ends the user's sessions; a
logout ends its session on the server, so a copy of the cookie is refused everywhere too."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayProcess, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

NEW_PASSWORD = "a-new-password-42"


async def _user(admin: AdminClient, name: str, role: int = m.ROLE_USER) -> AdminClient:
    await admin.ok("POST", "/api/user/", json={"username": name, "password": ROOT_PASSWORD, "role": role})
    client = AdminClient(admin.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login", json={"username": name, "password": ROOT_PASSWORD}))[
        "id"]
    return client


async def _self_ok(http: httpx.AsyncClient, user_id: int | None, cookie: str) -> bool:
    resp = await http.get("/api/user/self", headers={"New-Api-User": str(user_id), "Cookie": f"session={cookie}"})
    return bool(resp.json().get("success"))


async def test_a_planted_session_never_becomes_a_login(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.ok("POST", "/api/user/", json={"username": "victim", "password": ROOT_PASSWORD})
    # a validly signed session of the attacker's (pre-login state such as an OAuth state)
    app = gateway.app
    planted = app.session_interface.get_signing_serializer(app).dumps({"oauth_state": "attacker"})
    async with httpx.AsyncClient(base_url=gateway.base_url) as victim:
        resp = await victim.post("/api/user/login", json={"username": "victim", "password": ROOT_PASSWORD},
                                 headers={"Cookie": f"session={planted}"})
        user, issued = resp.json(), resp.cookies.get("session")
        assert user["success"] and issued and issued != planted  # the login wrote a new session
        async with httpx.AsyncClient(base_url=gateway.base_url) as bare:
            assert not await _self_ok(bare, user["data"]["id"], planted)  # the planted one is still nobody
            assert await _self_ok(bare, user["data"]["id"], issued)


async def test_a_password_change_ends_every_other_session(gateway: GatewayServer, admin: AdminClient) -> None:
    laptop = await _user(admin, "alice")
    phone = AdminClient(gateway.base_url)
    phone.user_id = (await phone.ok("POST", "/api/user/login", json={"username": "alice", "password": ROOT_PASSWORD}))[
        "id"]
    stolen = phone.http.cookies.get("session")
    await laptop.ok("PUT", "/api/user/self", json={"password": NEW_PASSWORD, "original_password": ROOT_PASSWORD})
    # the changer's session was re-issued under the new version and goes on
    assert (await laptop.ok("GET", "/api/user/self"))["username"] == "alice"
    # the other one (or a copy an attacker holds) is over, with no database read per call
    assert (await phone.call("GET", "/api/user/self"))["success"] is False
    async with httpx.AsyncClient(base_url=gateway.base_url) as bare:
        assert not await _self_ok(bare, laptop.user_id, stolen or "")
    # an admin setting the password ends the user's sessions too, the changer's included
    await admin.ok("PUT", "/api/user/", json={"id": laptop.user_id, "password": "set-by-the-admin-1"})
    assert (await laptop.call("GET", "/api/user/self"))["success"] is False
    await laptop.close()
    await phone.close()


async def test_a_role_change_ends_the_users_sessions(gateway: GatewayServer, admin: AdminClient) -> None:
    bob = await _user(admin, "bob")
    await admin.ok("POST", "/api/user/manage", json={"id": bob.user_id, "action": "promote"})
    assert (await bob.call("GET", "/api/user/self"))["success"] is False  # log in again as an admin
    again = await bob.ok("POST", "/api/user/login", json={"username": "bob", "password": ROOT_PASSWORD})
    assert again["role"] == m.ROLE_ADMIN
    assert (await bob.ok("GET", "/api/user/self"))["permissions"]["admin"] is True
    # a ban is checked on every call; lifting it does not need a new login
    await admin.ok("POST", "/api/user/manage", json={"id": bob.user_id, "action": "demote"})
    await bob.ok("POST", "/api/user/login", json={"username": "bob", "password": ROOT_PASSWORD})
    await admin.ok("POST", "/api/user/manage", json={"id": bob.user_id, "action": "disable"})
    assert (await bob.call("GET", "/api/user/self"))["success"] is False
    await admin.ok("POST", "/api/user/manage", json={"id": bob.user_id, "action": "enable"})
    assert (await bob.ok("GET", "/api/user/self"))["username"] == "bob"
    await bob.close()


async def test_a_logout_ends_copies_of_the_cookie(gateway: GatewayServer, admin: AdminClient,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from faregate.accounts import sessions

    laptop = await _user(admin, "carol")
    phone = AdminClient(gateway.base_url)
    phone.user_id = (await phone.ok("POST", "/api/user/login", json={"username": "carol",
                                                                    "password": ROOT_PASSWORD}))["id"]
    copied = laptop.http.cookies.get("session") or ""
    async with httpx.AsyncClient(base_url=gateway.base_url) as bare:
        assert await _self_ok(bare, laptop.user_id, copied)
        await laptop.ok("GET", "/api/user/logout")
        assert not await _self_ok(bare, laptop.user_id, copied)  # ended on the server, not only in this browser
        assert (await phone.ok("GET", "/api/user/self"))["username"] == "carol"  # only that session
        # an access token is no session: it goes on
        token = await phone.ok("GET", "/api/user/token")
        by_token = await bare.get("/api/user/self", headers={"Authorization": token,
                                                             "New-Api-User": str(phone.user_id)})
        assert by_token.json()["success"] is True
    # logging in and out in a loop cannot grow the list without end: past its cap, a logout
    # ends every session of the user
    monkeypatch.setattr(sessions, "MAX_ENDED_PER_USER", 2)
    for ended in (2, 3):
        await laptop.ok("POST", "/api/user/login", json={"username": "carol", "password": ROOT_PASSWORD})
        await laptop.ok("GET", "/api/user/logout")
        if ended == 2:  # still remembered one by one
            assert (await phone.ok("GET", "/api/user/self"))["username"] == "carol"
    assert await m.AuthFlow.filter(purpose=sessions.ENDED, user_id=laptop.user_id).count() == 0
    assert (await phone.call("GET", "/api/user/self"))["success"] is False
    await laptop.close()
    await phone.close()


@pytest.fixture
def redis_available() -> None:
    import redis

    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/0").ping()
    except redis.RedisError:
        pytest.skip("Redis is not running on 127.0.0.1:6379")


def test_sessions_travel_between_nodes_and_die_everywhere(tmp_path: object, redis_available: None) -> None:
    """Two nodes sharing the database, SESSION_SECRET and Redis: a session made on one is
    good on the other, and a password changed, or a logout, on one ends it on the other at
    once."""
    shared = {"FAREGATE_DB_URL": f"sqlite://{tmp_path}/shared.db", "FAREGATE_CRYPTO_SECRET": "shared-crypto",
              "FAREGATE_SESSION_SECRET": "shared-session", "FAREGATE_REDIS_URL": "redis://127.0.0.1:6379/0",
              "FAREGATE_SYNC_INTERVAL": "3600"}  # only the change feed's signal may carry the change
    node_a = GatewayProcess(f"{tmp_path}/a", env=shared)
    node_b = GatewayProcess(f"{tmp_path}/b", env=shared)
    with ThreadPoolExecutor(2) as pool:  # the two start side by side
        list(pool.map(GatewayProcess.start, (node_a, node_b)))
    try:
        a = httpx.Client(base_url=node_a.base_url, timeout=30)
        a.post("/api/setup", json={"username": "root", "password": ROOT_PASSWORD, "confirmPassword": ROOT_PASSWORD})
        uid = a.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD}).json()["data"]["id"]
        other = httpx.Client(base_url=node_a.base_url, timeout=30)
        other.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})
        cookie = other.cookies.get("session")
        headers = {"New-Api-User": str(uid), "Cookie": f"session={cookie}"}
        assert httpx.get(node_b.base_url + "/api/user/self", headers=headers).json()["success"] is True
        changed = a.put("/api/user/self", json={"password": NEW_PASSWORD, "original_password": ROOT_PASSWORD},
                        headers={"New-Api-User": str(uid)})
        assert changed.json()["success"] is True
        deadline = time.monotonic() + 2
        while httpx.get(node_b.base_url + "/api/user/self", headers=headers).json()["success"]:
            assert time.monotonic() < deadline, "the revoked session still works on the other node"
            time.sleep(0.05)
        # a logout on one node ends the session, copies included, on the other
        other.post("/api/user/login", json={"username": "root", "password": NEW_PASSWORD})
        headers["Cookie"] = f"session={other.cookies.get('session')}"
        assert httpx.get(node_b.base_url + "/api/user/self", headers=headers).json()["success"] is True
        assert other.get("/api/user/logout").json()["success"] is True
        deadline = time.monotonic() + 2
        while httpx.get(node_b.base_url + "/api/user/self", headers=headers).json()["success"]:
            assert time.monotonic() < deadline, "the logged-out session still works on the other node"
            time.sleep(0.05)
        a.close()
        other.close()
    finally:
        node_a.stop()
        node_b.stop()


async def test_a_logged_out_cookie_prices_as_a_visitor(gateway: GatewayServer, admin: AdminClient,
                                                      fake_openai: FakeOpenAI) -> None:
    """The public pricing page reads the caller's group from the session: a copy of a cookie
    logged out must not still show what that user's group may use."""
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o")
    await admin.add_channel(base_url=fake_openai.base_url, models="o3-mini", group="svip")
    await admin.set_option("UserUsableGroups", {"default": "default"})  # svip: its members only
    dave = await _user(admin, "dave")
    await admin.ok("PUT", "/api/user/", json={"id": dave.user_id, "username": "dave", "group": "svip"})
    await dave.ok("POST", "/api/user/login", json={"username": "dave", "password": ROOT_PASSWORD})
    copied = dave.http.cookies.get("session") or ""

    async def models_seen() -> list[str]:
        async with httpx.AsyncClient(base_url=gateway.base_url) as bare:
            body = (await bare.get("/api/pricing", headers={"Cookie": f"session={copied}"})).json()
        return [d["model_name"] for d in body["data"]]

    assert "o3-mini" in await models_seen()
    await dave.ok("GET", "/api/user/logout")
    assert await models_seen() == ["gpt-4o"]
    await dave.close()
