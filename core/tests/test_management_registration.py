"""Signing up with a password (``POST /api/user/register``), new-api's switches for it and
for password login, invitation rewards, and the routes of sign-in methods whose plugin is
not installed (issue 16)."""

from __future__ import annotations

from typing import Any

import httpx

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer

PASSWORD = "a-long-password-1"


async def _register(http: httpx.AsyncClient, **fields: Any) -> httpx.Response:
    return await http.post("/api/user/register", json={"username": "newbie", "password": PASSWORD, **fields})


async def test_sign_up_and_log_in(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.set_option("QuotaForNewUser", "1000")
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        assert (await _register(http, password2=PASSWORD)).json() == {"success": True, "message": ""}
        user = await m.User.get(username="newbie")
        assert (user.role, user.quota, user.email, len(user.aff_code or "")) == (m.ROLE_USER, 1000, "", 4)
        taken = (await _register(http)).json()
        assert taken["success"] is False and "taken" in taken["message"]
        login = (await http.post("/api/user/login", json={"username": "newbie", "password": PASSWORD})).json()
        assert login["success"] is True and login["data"]["username"] == "newbie"
        # declared bounds: a short password, a mismatched confirmation, an unknown field are 400s
        for body in ({"password": "short"}, {"password2": "different-1"}, {"colour": "red"}):
            resp = await _register(http, username="other", **body)
            assert resp.status_code == 400, body


async def test_switches(gateway: GatewayServer, admin: AdminClient) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        await admin.set_option("PasswordRegisterEnabled", False)
        assert "closed" in (await _register(http)).json()["message"]
        await admin.set_option("PasswordRegisterEnabled", True)
        await admin.set_option("RegisterEnabled", False)
        assert "closed" in (await _register(http)).json()["message"]
        assert not await m.User.filter(username="newbie").exists()
        await admin.set_option("PasswordLoginEnabled", False)  # an SSO-only site: the right password too
        refused = (await http.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})).json()
        assert refused == {"success": False, "message": "password login is disabled by the administrator"}
        assert (await admin.ok("GET", "/api/user/self"))["username"] == "root"  # sessions already made go on
        await admin.set_option("PasswordLoginEnabled", True)
        assert (await http.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})).json()[
            "success"] is True


async def test_invitation_rewards(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.set_option("QuotaForNewUser", "100")
    await admin.set_option("QuotaForInvitee", "50")
    await admin.set_option("QuotaForInviter", "1000000")
    code = await admin.ok("GET", "/api/user/aff")
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        assert (await _register(http, aff_code=code)).json()["success"] is True
        assert (await _register(http, username="stranger", aff_code="nope")).json()["success"] is True
    invitee, stranger = await m.User.get(username="newbie"), await m.User.get(username="stranger")
    assert (invitee.quota, invitee.inviter_id) == (150, admin.user_id)
    assert (stranger.quota, stranger.inviter_id) == (100, 0)
    me = await admin.ok("GET", "/api/user/self")
    assert (me["aff_count"], me["aff_quota"], me["aff_history_quota"]) == (1, 1_000_000, 1_000_000)
    before = me["quota"]
    await admin.ok("POST", "/api/user/aff_transfer", json={"quota": 500_000})
    after = await admin.ok("GET", "/api/user/self")
    assert (after["quota"] - before, after["aff_quota"]) == (500_000, 500_000)


async def test_missing_sign_in_plugins_say_so(make_gateway: Any) -> None:
    gw: GatewayServer = await make_gateway(plugins=[])  # the core alone
    admin = AdminClient(gw.base_url)
    await admin.setup_root()
    for method, path, plugin in (("GET", "/api/user/2fa/status", "faregate-auth-totp"),
                                 ("POST", "/api/user/passkey/login/begin", "faregate-auth-passkeys"),
                                 ("GET", "/api/user/passkey", "faregate-auth-passkeys"),
                                 ("GET", "/api/verification", "faregate-auth-email"),
                                 ("GET", "/api/oauth/github", "faregate-auth-oauth"),
                                 ("GET", "/api/oauth/telegram/login", "faregate-auth-telegram"),
                                 ("GET", "/api/oauth/wechat", "faregate-auth-wechat")):
        answer = await admin.call(method, path)
        assert answer["success"] is False and plugin in answer["message"], (path, answer)
    step = await admin.call("POST", "/api/user/login/2fa", json={"code": "123456"})
    assert step["success"] is False and "faregate-auth-totp" in step["message"]
    # email verification on, no email plugin: sign-up asks for a code nobody can send, and says where
    await admin.set_option("EmailVerificationEnabled", True)
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        assert "/api/verification" in (await _register(http)).json()["message"]
    await admin.close()


async def test_status_says_which_sign_in_methods_are_on(make_gateway: Any) -> None:
    """``GET /api/status`` carries new-api's sign-in and payment fields (what its UI reads to
    draw the login page): on only where the method's plugin is installed and enabled (and, in
    the next test, with the public client id and never the secret)."""
    bare: GatewayServer = await make_gateway(plugins=[])  # the core alone
    async with httpx.AsyncClient(base_url=bare.base_url) as http:
        status = (await http.get("/api/status")).json()["data"]
    assert status["github_oauth"] is False and status["github_client_id"] == "" and status["passkey_login"] is False


async def test_status_shows_an_enabled_method_without_its_secret(make_gateway: Any) -> None:
    full: GatewayServer = await make_gateway()
    admin = AdminClient(full.base_url)
    await admin.setup_root()
    for key, value in (("GitHubClientId", "gh-client"), ("GitHubClientSecret", "gh-secret-value"),
                       ("GitHubOAuthEnabled", True)):
        await admin.set_option(key, value)
    async with httpx.AsyncClient(base_url=full.base_url) as http:
        answer = await http.get("/api/status")
    status = answer.json()["data"]
    assert status["github_oauth"] is True and status["github_client_id"] == "gh-client"
    assert "gh-secret-value" not in answer.text and status["price"] > 0
    await admin.close()
