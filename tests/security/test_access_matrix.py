"""The role × route matrix (issue 10): every management route declares who may call it,
and refuses everyone below that level (anonymous, a user, an admin, their access tokens,
an API key used as a session); a user never reads or changes another user's keys or logs (BOLA); no answer
carries a secret."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from faregate.db import models as m
from faregate.management.common import ACCESS
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer

PARAM = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")


def management_routes(server: GatewayServer) -> list[tuple[str, str, Any]]:
    """``(method, path, access)`` for every ``/api`` route of the running app."""
    app = server.app
    routes = []
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api") or rule.endpoint == "static":
            continue
        view = app.view_functions[rule.endpoint]
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            routes.append((method, PARAM.sub("1", rule.rule), getattr(view, ACCESS, None)))
    return routes


async def _session(server: GatewayServer, admin: AdminClient, username: str, role: int) -> AdminClient:
    await admin.ok("POST", "/api/user/", json={"username": username, "password": ROOT_PASSWORD, "role": role})
    client = AdminClient(server.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login",
                                      json={"username": username, "password": ROOT_PASSWORD}))["id"]
    return client


def _refused(resp: httpx.Response) -> bool:
    if resp.status_code in (401, 403):
        return True
    try:
        body = resp.json()
    except ValueError:
        return False
    return resp.status_code < 500 and body.get("success") is False and "data" not in body


async def test_every_route_declares_its_access_level(gateway: GatewayServer) -> None:
    undeclared = [(method, path) for method, path, access in management_routes(gateway) if access is None]
    assert undeclared == [], "declare each route with @require(role), @public or by_api_key"


async def test_every_route_refuses_callers_below_its_level(gateway: GatewayServer, admin: AdminClient) -> None:
    user = await _session(gateway, admin, "plainuser", m.ROLE_USER)
    boss = await _session(gateway, admin, "adminuser", m.ROLE_ADMIN)
    api_key = await admin.add_token()
    anonymous = httpx.AsyncClient(base_url=gateway.base_url)
    # access tokens (the management API's keys) carry their user's role, no more
    user_token = await user.ok("GET", "/api/user/token")
    boss_token = await boss.ok("GET", "/api/user/token")

    def by_token(token: str, user_id: Any) -> Any:
        return lambda method, path: anonymous.request(
            method, path, json={}, headers={"Authorization": token, "New-Api-User": str(user_id)})

    callers: list[tuple[str, int, Any]] = [
        ("user's access token", m.ROLE_USER, by_token(user_token, user.user_id)),
        ("admin's access token", m.ROLE_ADMIN, by_token(boss_token, boss.user_id)),
        ("anonymous", 0, lambda method, path: anonymous.request(method, path, json={})),
        ("API key as a session", 0, lambda method, path: anonymous.request(
            method, path, json={}, headers={"Authorization": f"Bearer {api_key}", "New-Api-User": "1"})),
        ("user", m.ROLE_USER, lambda method, path: user.http.request(
            method, path, json={}, headers={"New-Api-User": str(user.user_id)})),
        ("admin", m.ROLE_ADMIN, lambda method, path: boss.http.request(
            method, path, json={}, headers={"New-Api-User": str(boss.user_id)})),
    ]
    leaks = []
    for method, path, access in management_routes(gateway):
        if not isinstance(access, int):
            continue
        for name, level, call in callers:
            if level >= access:
                continue
            resp = await call(method, path)
            if not _refused(resp):
                leaks.append((name, method, path, resp.status_code, resp.text[:120]))
    await anonymous.aclose()
    await user.close()
    await boss.close()
    assert leaks == []


async def test_a_user_never_touches_another_users_keys_or_logs(gateway: GatewayServer, admin: AdminClient) -> None:
    victim = await _session(gateway, admin, "victim", m.ROLE_USER)
    thief = await _session(gateway, admin, "thief", m.ROLE_USER)
    token = await victim.ok("POST", "/api/token/", json={"name": "v", "expired_time": -1})
    await m.Log.create(user_id=victim.user_id, username="victim", type=m.LOG_CONSUME, created_at=1, quota=5)
    tid = token["id"]
    attempts = [("GET", f"/api/token/{tid}", None), ("POST", f"/api/token/{tid}/key", None),
                ("PUT", "/api/token/", {"id": tid, "name": "stolen"}), ("DELETE", f"/api/token/{tid}", None),
                ("POST", "/api/token/batch/keys", {"ids": [tid]})]
    for method, path, body in attempts:
        resp = await thief.http.request(method, path, json=body, headers={"New-Api-User": str(thief.user_id)})
        if path.endswith("/batch/keys"):
            assert resp.json()["data"] == {"keys": {}}
        else:
            assert _refused(resp), (method, path, resp.text)
        row = await m.Token.get(id=tid)
        assert row.name == "v"
    assert (await thief.ok("GET", "/api/log/self"))["total"] == 0
    export = await thief.http.get("/api/log/self/export", params={"format": "jsonl"},
                                  headers={"New-Api-User": str(thief.user_id)})
    assert export.status_code == 200 and export.text.strip() == ""
    assert await thief.ok("GET", "/api/data/self", params={"start_timestamp": 0, "end_timestamp": 86400}) == []
    assert (await thief.ok("GET", "/api/log/self/stat"))["quota"] == 0
    await victim.close()
    await thief.close()


@pytest.mark.parametrize("path", ["/api/user/", "/api/channel/", "/api/channel/search?keyword=openai", "/api/token/",
                                  "/api/log/", "/api/option/", "/api/user/self"])
async def test_lists_carry_no_secret(gateway: GatewayServer, admin: AdminClient, path: str) -> None:
    await admin.add_channel(base_url="http://127.0.0.1:9", models="m", key="sk-channel-secret-0123456789")
    await admin.add_token()
    text = (await admin.http.get(path, headers={"New-Api-User": str(admin.user_id)})).text
    assert "sk-channel-secret" not in text and "argon2" not in text and "$2" not in text
    hashes = [u.password_hash for u in await m.User.all()] + [t.key_hash for t in await m.Token.all()]
    assert not any(h and h in text for h in hashes)
