"""Secure verification (``POST /api/verify``), second factors as plugins
(``register_second_factors``), an admin removing a user's 2FA or passkey, and moving
invitation quota into the balance (issue 10)."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import pytest

from faregate import hookimpl
from faregate.db import models as m
from faregate.plugins import load_plugins
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer

#: the second factors' own plugins, left out: these tests bring a stand-in, or none
NO_FACTORS = ["faregate-auth-totp", "faregate-auth-passkeys"]


@pytest.fixture
async def gateway(make_gateway: Any) -> GatewayServer:
    server: GatewayServer = await make_gateway(plugins=load_plugins(block=NO_FACTORS))
    return server


class CodeFactor:
    """A stand-in TOTP: each enrolled user has one fixed code."""

    method = "2fa"

    def __init__(self) -> None:
        self.codes: dict[int, str] = {}

    async def enrolled(self, user_id: int) -> bool:
        return user_id in self.codes

    def verify(self, user_id: int, code: str, session: MutableMapping[str, Any]) -> bool:
        return self.codes.get(user_id) == code

    def reset(self, user_id: int) -> bool:
        return self.codes.pop(user_id, None) is not None


class FactorPlugin:
    __name__ = "test-second-factor"

    def __init__(self) -> None:
        self.factor = CodeFactor()

    @hookimpl
    def register_second_factors(self, register: Any, services: Any) -> None:
        register(self.factor)


async def _login(server: GatewayServer, admin: AdminClient, username: str, role: int = m.ROLE_USER) -> AdminClient:
    await admin.ok("POST", "/api/user/", json={"username": username, "password": ROOT_PASSWORD, "role": role})
    client = AdminClient(server.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login",
                                      json={"username": username, "password": ROOT_PASSWORD}))["id"]
    return client


async def test_password_verifies_a_user_without_second_factor(gateway: GatewayServer, admin: AdminClient) -> None:
    done = await admin.ok("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD})
    assert done["verified"] is True and done["method"] == "password" and done["expires_at"] > 0
    wrong = await admin.call("POST", "/api/verify", json={"method": "password", "code": "not-it"})
    assert wrong["success"] is False and "failed" in wrong["message"]
    missing = await admin.call("POST", "/api/verify", json={"method": "2fa", "code": "123456"})
    assert missing["success"] is False and "no 2fa plugin is installed" in missing["message"]
    bad = await admin.http.post("/api/verify", json={"method": "sms", "code": "1"},
                                headers={"New-Api-User": str(admin.user_id)})
    assert bad.status_code == 400 and "method" in bad.json()["message"]


async def test_an_enrolled_factor_is_required_over_the_password(make_gateway: Any) -> None:
    plugin = FactorPlugin()
    server = await make_gateway(plugins=load_plugins(block=NO_FACTORS, extra=[plugin]))
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    assert admin.user_id is not None
    plugin.factor.codes[admin.user_id] = "424242"
    refused = await admin.call("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD})
    assert refused["success"] is False and "verify with 2fa" in refused["message"]
    assert (await admin.call("POST", "/api/verify", json={"method": "2fa", "code": "000000"}))["success"] is False
    assert (await admin.ok("POST", "/api/verify", json={"method": "2fa", "code": " 424242 "}))["verified"]
    not_set = await admin.call("POST", "/api/verify", json={"method": "passkey", "code": "x"})
    assert "no passkey plugin is installed" in not_set["message"]
    await admin.close()


class PinFactor(CodeFactor):
    """A third-party factor under a method name of its own."""

    method = "pin"


async def test_a_plugins_own_factor_verifies(make_gateway: Any) -> None:
    """``POST /api/verify`` takes the method of any installed factor, not only new-api's
    ``2fa`` and ``passkey``; a name no factor has is a 400 naming the field."""
    plugin = FactorPlugin()
    plugin.factor = PinFactor()
    server = await make_gateway(plugins=load_plugins(block=NO_FACTORS, extra=[plugin]))
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    assert admin.user_id is not None
    plugin.factor.codes[admin.user_id] = "2468"
    refused = await admin.call("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD})
    assert refused["success"] is False and "verify with pin" in refused["message"]
    assert (await admin.call("POST", "/api/verify", json={"method": "pin", "code": "1357"}))["success"] is False
    done = await admin.ok("POST", "/api/verify", json={"method": "pin", "code": "2468"})
    assert done["verified"] is True and done["method"] == "pin"
    for method in ("sms", "PIN", "p" * 33):
        bad = await admin.http.post("/api/verify", json={"method": method, "code": "1"},
                                    headers={"New-Api-User": str(admin.user_id)})
        assert bad.status_code == 400 and "method" in bad.json()["message"], method
    await admin.close()


async def test_an_access_token_cannot_verify(gateway: GatewayServer, admin: AdminClient) -> None:
    token = await admin.ok("GET", "/api/user/token")
    admin.http.cookies.clear()  # the access token alone
    resp = await admin.http.post("/api/verify", json={"method": "password", "code": ROOT_PASSWORD},
                                 headers={"Authorization": token, "New-Api-User": str(admin.user_id)})
    assert resp.status_code == 401 and "session" in resp.json()["message"]


async def test_admin_removes_a_users_second_factor(make_gateway: Any) -> None:
    plugin = FactorPlugin()
    server = await make_gateway(plugins=load_plugins(block=NO_FACTORS, extra=[plugin]))
    root = AdminClient(server.base_url)
    await root.setup_root()
    boss = await _login(server, root, "boss", m.ROLE_ADMIN)
    user = await _login(server, root, "plain")
    other_admin = await _login(server, root, "peer", m.ROLE_ADMIN)
    assert user.user_id and other_admin.user_id
    plugin.factor.codes.update({user.user_id: "1", other_admin.user_id: "2"})
    await boss.ok("DELETE", f"/api/user/{user.user_id}/2fa")
    assert user.user_id not in plugin.factor.codes
    again = await boss.call("DELETE", f"/api/user/{user.user_id}/2fa")
    assert again["success"] is False and "no two-factor" in again["message"]
    peer = await boss.call("DELETE", f"/api/user/{other_admin.user_id}/2fa")  # same role: refused
    assert peer["success"] is False and other_admin.user_id in plugin.factor.codes
    no_plugin = await boss.call("DELETE", f"/api/user/{user.user_id}/reset_passkey")
    assert no_plugin["success"] is False and "no passkey plugin is installed" in no_plugin["message"]
    assert (await boss.call("DELETE", "/api/user/999999/2fa"))["message"] == "user not found"
    assert await m.Log.filter(type=m.LOG_MANAGE, user_id=user.user_id).count() == 1
    for client in (root, boss, user, other_admin):
        await client.close()


async def test_without_plugins_factor_resets_answer_clearly(gateway: GatewayServer, admin: AdminClient) -> None:
    user = await _login(gateway, admin, "someone")
    for path in (f"/api/user/{user.user_id}/2fa", f"/api/user/{user.user_id}/reset_passkey"):
        answer = await admin.call("DELETE", path)
        assert answer["success"] is False and "plugin is installed" in answer["message"]
    await user.close()


async def test_an_account_without_a_password_sets_one(make_gateway: Any) -> None:
    """An account made through OAuth, Telegram or WeChat has no password: it sets one with its
    login session alone (new-api's first-binding case), or, with a second factor enrolled,
    after a secure verification; never with an access token. Then it can unbind its last
    outside login."""
    plugin = FactorPlugin()
    server = await make_gateway(plugins=load_plugins(block=NO_FACTORS, extra=[plugin]))
    root = AdminClient(server.base_url)
    await root.setup_root()
    first = {"password": "my-first-password-1"}
    for name, enrolled in (("sso-user", False), ("sso-2fa", True)):
        user = await _login(server, root, name)
        assert user.user_id is not None
        await m.User.filter(id=user.user_id).update(password_hash="")  # as an OAuth sign-up leaves it
        await m.UserBinding.create(user_id=user.user_id, provider="github", subject=f"gh-{name}", created_at=1)
        assert "set a password" in (await user.call("DELETE", "/api/user/oauth/bindings/github"))["message"]
        token = await user.ok("GET", "/api/user/token")
        by_token = await user.http.put("/api/user/self", json=first,
                                       headers={"Authorization": token, "New-Api-User": str(user.user_id),
                                                "Cookie": ""})
        assert by_token.status_code == 401 and "session" in by_token.json()["message"]
        if enrolled:
            plugin.factor.codes[user.user_id] = "777777"
            refused = await user.http.put("/api/user/self", json=first, headers={"New-Api-User": str(user.user_id)})
            assert refused.status_code == 403 and refused.json()["code"] == "VERIFICATION_REQUIRED"
            await user.ok("POST", "/api/verify", json={"method": "2fa", "code": "777777"})
        await user.ok("PUT", "/api/user/self", json=first)
        assert (await user.ok("GET", "/api/user/self"))["username"] == name  # this session goes on
        relogin = await user.ok("POST", "/api/user/login", json={"username": name, **first})
        assert relogin.get("id") == user.user_id or relogin.get("require_2fa") is True
        await user.ok("DELETE", "/api/user/oauth/bindings/github")
        await user.close()
    await root.close()


async def test_invitation_quota_moves_once(gateway: GatewayServer, admin: AdminClient) -> None:
    user = await _login(gateway, admin, "inviter")
    unit = 500_000  # QuotaPerUnit's default
    await m.User.filter(id=user.user_id).update(aff_quota=3 * unit, quota=0)
    small = await user.call("POST", "/api/user/aff_transfer", json={"quota": unit - 1})
    assert small["success"] is False and "at least" in small["message"]
    wrong_type = await user.http.post("/api/user/aff_transfer", json={"quota": "5"},
                                      headers={"New-Api-User": str(user.user_id)})
    assert wrong_type.status_code == 400 and "quota" in wrong_type.json()["message"]
    # ten concurrent transfers of 2 units from 3: exactly one moves
    answers = await asyncio.gather(*(user.call("POST", "/api/user/aff_transfer", json={"quota": 2 * unit})
                                     for _ in range(10)))
    assert sum(a["success"] for a in answers) == 1
    row = await m.User.get(id=user.user_id)
    assert (row.aff_quota, row.quota) == (unit, 2 * unit)
    shown = await user.ok("GET", "/api/user/self")
    assert (shown["aff_quota"], shown["quota"]) == (unit, 2 * unit)
    assert await m.Log.filter(user_id=user.user_id, type=m.LOG_TOPUP).count() == 1
    await user.close()
