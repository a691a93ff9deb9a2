"""Telegram binding and replays (issue 16). The widget reaches the binding by a plain
redirect, with the session cookie but no New-Api-User header: the cookie alone is enough, but
only with the state this user was given, so a link from another site cannot bind the
attacker's Telegram to the visitor's account (and let the attacker log in as them). Signed
widget data logs in once, also when replays race."""

from __future__ import annotations

import asyncio
import time

import httpx

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate_auth_telegram.widget import sign

BOT_TOKEN = "123456:bot-token-for-tests"
#: the moment every widget's age counts from: with the clock read at each call, data signed at
#: age 0 and, a second later, at age 1 were the same data, refused the second time as a replay
SIGNED_AT = int(time.time())


def widget(user_id: str, age: int = 0) -> dict[str, str]:
    return sign({"id": user_id, "first_name": "Tele", "auth_date": str(SIGNED_AT - age)}, BOT_TOKEN)


async def _enable(admin: AdminClient) -> None:
    await admin.set_option("TelegramOAuthEnabled", True)
    await admin.set_option("TelegramBotToken", BOT_TOKEN)


async def test_binding_takes_the_cookie_and_a_state(gateway: GatewayServer, admin: AdminClient) -> None:
    await _enable(admin)
    await admin.ok("POST", "/api/user/", json={"username": "mallory", "password": ROOT_PASSWORD})
    mallory = AdminClient(gateway.base_url)
    mallory.user_id = (await mallory.ok("POST", "/api/user/login", json={"username": "mallory",
                                                                        "password": ROOT_PASSWORD}))["id"]
    cookie = {"Cookie": f"session={admin.http.cookies.get('session')}"}  # the victim's browser: no header
    async with httpx.AsyncClient(base_url=gateway.base_url) as browser:
        # a cross-site link with the attacker's signed data: no state, or the attacker's own
        forged = await browser.get("/api/oauth/telegram/bind", params=widget("666"), headers=cookie)
        assert forged.status_code == 403 and "state" in forged.json()["message"]
        theirs = await mallory.ok("GET", "/api/oauth/telegram/state")
        forged = await browser.get("/api/oauth/telegram/bind", params={**widget("666", 1), "state": theirs},
                                   headers=cookie)
        assert forged.status_code == 403
        assert not await m.UserBinding.filter(provider="telegram").exists()
    async with httpx.AsyncClient(base_url=gateway.base_url) as stranger:  # no session at all, or an access token
        assert (await stranger.get("/api/oauth/telegram/bind", params=widget("1", 2))).status_code == 401
        token = await admin.ok("GET", "/api/user/token")
        by_token = await stranger.get("/api/oauth/telegram/bind", params=widget("1", 3),
                                      headers={"Authorization": token, "New-Api-User": str(admin.user_id)})
        assert by_token.status_code == 401
    async with httpx.AsyncClient(base_url=gateway.base_url) as browser:
        # the widget's redirect in the user's own browser: the cookie and the user's state
        state = await admin.ok("GET", "/api/oauth/telegram/state")
        bound = await browser.get("/api/oauth/telegram/bind", params={**widget("987", 4), "state": state},
                                  headers=cookie)
        assert bound.status_code == 302 and bound.headers["Location"] == "/console/personal"
        assert (await admin.ok("GET", "/api/user/self"))["telegram_id"] == "987"
        await admin.ok("DELETE", "/api/user/oauth/bindings/telegram")
        again = await browser.get("/api/oauth/telegram/bind", params={**widget("987", 5), "state": state},
                                  headers=cookie)
        assert again.status_code == 403  # a state works once
    await mallory.close()


async def test_racing_replays_log_in_once(gateway: GatewayServer, admin: AdminClient) -> None:
    await _enable(admin)
    state = await admin.ok("GET", "/api/oauth/telegram/state")
    await admin.http.get("/api/oauth/telegram/bind", params={**widget("4242"), "state": state})
    data = widget("4242", 1)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        answers = await asyncio.gather(*(http.get("/api/oauth/telegram/login", params=data) for _ in range(12)))
        assert sum(a.json()["success"] for a in answers) == 1
        # and after the first use, replays racing each other all fail
        answers = await asyncio.gather(*(http.get("/api/oauth/telegram/login", params=data) for _ in range(12)))
        assert [a.json()["success"] for a in answers] == [False] * 12
        assert all("used already" in a.json()["message"] for a in answers)
