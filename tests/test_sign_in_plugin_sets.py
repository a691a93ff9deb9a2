"""The core works with any subset of the sign-in plugins (issue 16): with one of them alone
(chosen by the ``FAREGATE_PLUGINS`` allow list), passwords still sign up and log in,
``GET /api/status`` turns on only that method's switch (the others' options do not exist),
the other methods' new-api routes answer which plugin to install, and the one present works.
The core alone and every plugin together are tested in core/tests/test_management_registration.py."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from faregate.plugins import load_plugins
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer

ORIGIN = "http://localhost:3000"
BOT_TOKEN = "123456:bot-token-for-tests"

#: plugin → (options that switch it on, its /api/status field, a new-api route of it)
METHODS: dict[str, tuple[dict[str, Any], str | None, tuple[str, str]]] = {
    "faregate-auth-totp": ({}, None, ("GET", "/api/user/2fa/status")),
    "faregate-auth-passkeys": ({"ServerAddress": ORIGIN, "passkey.enabled": True}, "passkey_login",
                               ("POST", "/api/user/passkey/login/begin")),
    "faregate-auth-email": ({"SMTPServer": "127.0.0.1"}, None, ("GET", "/api/reset_password")),
    "faregate-auth-oauth": ({"GitHubClientId": "client-1", "GitHubOAuthEnabled": True}, "github_oauth",
                            ("GET", "/api/oauth/state")),
    "faregate-auth-telegram": ({"TelegramBotToken": BOT_TOKEN, "TelegramOAuthEnabled": True}, "telegram_oauth",
                               ("GET", "/api/oauth/telegram/login")),
    "faregate-auth-wechat": ({"WeChatServerAddress": "http://127.0.0.1:9", "WeChatAuthEnabled": True},
                             "wechat_login", ("GET", "/api/oauth/wechat")),
}


async def _totp_works(admin: AdminClient, http: httpx.AsyncClient) -> None:
    setup = await admin.ok("POST", "/api/user/2fa/setup")
    assert setup["secret"] and len(setup["backup_codes"]) == 4


async def _passkeys_work(admin: AdminClient, http: httpx.AsyncClient) -> None:
    options = (await http.post("/api/user/passkey/login/begin")).json()["data"]["options"]
    assert options["rpId"] == "localhost" and options["challenge"]


async def _email_works(admin: AdminClient, http: httpx.AsyncClient) -> None:
    answer = (await http.get("/api/reset_password", params={"email": "someone@example.com"})).json()
    assert answer["success"] is True and "reset link" in answer["message"]
    await admin.set_option("EmailVerificationEnabled", True)  # a code can be sent: the status says so
    assert (await http.get("/api/status")).json()["data"]["email_verification"] is True


async def _oauth_works(admin: AdminClient, http: httpx.AsyncClient) -> None:
    state = (await http.get("/api/oauth/state")).json()
    assert state["success"] is True and len(state["data"]) >= 24


async def _telegram_works(admin: AdminClient, http: httpx.AsyncClient) -> None:
    from faregate_auth_telegram.widget import sign

    data = sign({"id": "1", "first_name": "T", "auth_date": str(int(time.time()))}, BOT_TOKEN)
    answer = (await http.get("/api/oauth/telegram/login", params=data)).json()
    assert answer["success"] is False and "bind it first" in answer["message"]  # checked, found no binding
    # the bot's public id for the script-free login, never the token's secret part
    status = (await http.get("/api/status")).json()
    assert status["data"]["telegram_bot_id"] == "123456" and "bot-token" not in str(status)


async def _wechat_works(admin: AdminClient, http: httpx.AsyncClient) -> None:
    answer = (await http.get("/api/oauth/wechat", params={"code": "123456"})).json()
    assert answer["success"] is False and "WeChat server could not be reached" in answer["message"]


WORKS: dict[str, Callable[[AdminClient, httpx.AsyncClient], Awaitable[None]]] = {
    "faregate-auth-totp": _totp_works, "faregate-auth-passkeys": _passkeys_work,
    "faregate-auth-email": _email_works, "faregate-auth-oauth": _oauth_works,
    "faregate-auth-telegram": _telegram_works, "faregate-auth-wechat": _wechat_works,
}


@pytest.mark.parametrize("plugin", sorted(METHODS))
async def test_one_sign_in_plugin_alone(plugin: str, make_gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAREGATE_PLUGINS", plugin)
    gw: GatewayServer = await make_gateway(plugins=load_plugins())
    admin = AdminClient(gw.base_url)
    await admin.setup_root()  # the password: the core's, whatever is installed
    loaded = {p["name"] for p in await admin.ok("GET", "/api/plugins") if not p["builtin"]}
    assert loaded == {plugin}
    for name, (options, _, _) in METHODS.items():
        for key, value in options.items():
            answer = await admin.call("PUT", "/api/option/", json={"key": key, "value": str(value).lower()
                                                                   if isinstance(value, bool) else value})
            # the core's own options always exist; a missing plugin's do not
            assert answer["success"] is (name == plugin or key == "ServerAddress"), (key, answer)
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        status = (await http.get("/api/status")).json()["data"]
        switches = {field: status[field] for _, field, _ in METHODS.values() if field is not None}
        assert switches == {field: field == METHODS[plugin][1] for field in switches}
        for name, (_, _, (method, path)) in METHODS.items():
            if name != plugin:
                answer = (await admin.http.request(method, path)).json()
                assert answer["success"] is False and f"the {name} plugin is not installed" in answer["message"]
        if plugin != "faregate-auth-telegram":  # a route the plugin adds to new-api's says so too
            answer = (await admin.http.get("/api/oauth/telegram/state")).json()
            assert "faregate-auth-telegram plugin is not installed" in answer["message"]
        await WORKS[plugin](admin, http)
        assert (await http.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})).json()[
            "success"] is True
    await admin.close()


async def test_email_verification_needs_the_email_plugin(make_gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``EmailVerificationEnabled`` is the core's option (sign-up checks it), but the code comes from
    the email plugin's ``GET /api/verification``: without the plugin ``GET /api/status`` says email
    verification is off (new-api's UI would ask for a code nobody can send), and sign-up, which the
    option still guards, says which plugin is missing."""
    monkeypatch.setenv("FAREGATE_DISABLED_PLUGINS", "faregate-auth-email")
    gw: GatewayServer = await make_gateway(plugins=load_plugins())
    admin = AdminClient(gw.base_url)
    await admin.setup_root()
    assert "faregate-auth-email" not in {p["name"] for p in await admin.ok("GET", "/api/plugins")}
    await admin.set_option("EmailVerificationEnabled", True)
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        assert (await http.get("/api/status")).json()["data"]["email_verification"] is False
        signup = {"username": "ann", "password": "a-long-password"}
        refused = (await http.post("/api/user/register", json=signup)).json()
        assert refused["success"] is False and "faregate-auth-email plugin" in refused["message"]  # still enforced
    await admin.close()
