"""Telegram login and binding with widget data signed as Telegram signs it: a bound account
logs in (its 2FA still applies), the binding redirects to the console, forged, stale and
replayed data are refused."""

from __future__ import annotations

import time

import httpx

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_auth_telegram.widget import sign

BOT_TOKEN = "123456:bot-token-for-tests"
#: the moment every widget's age counts from: with the clock read at each call, data signed at
#: age 0 and, a second later, at age 1 were the same data, refused the second time as a replay
SIGNED_AT = int(time.time())


def widget(user_id: str = "987654321", age: int = 0, token: str = BOT_TOKEN) -> dict[str, str]:
    return sign({"id": user_id, "first_name": "Tele", "username": "tele", "auth_date": str(SIGNED_AT - age)},
                token)


async def test_bind_then_log_in(gateway: GatewayServer, admin: AdminClient) -> None:
    assert "not enabled" in (await admin.call("GET", "/api/oauth/telegram/login", params=widget()))["message"]
    await admin.set_option("TelegramOAuthEnabled", True)
    await admin.set_option("TelegramBotToken", BOT_TOKEN)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        unbound = (await http.get("/api/oauth/telegram/login", params=widget())).json()
        assert unbound["success"] is False and "bind it first" in unbound["message"]
    bound = await admin.http.get("/api/oauth/telegram/bind", params=widget(age=1),
                                 headers={"New-Api-User": str(admin.user_id)})
    assert bound.status_code == 302 and bound.headers["Location"] == "/console/personal"
    assert (await admin.ok("GET", "/api/user/self"))["telegram_id"] == "987654321"
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        assert (await http.get("/api/oauth/telegram/login", params=widget(age=2))).json()["data"]["username"] == "root"


async def test_forged_stale_and_replayed_data(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.set_option("TelegramOAuthEnabled", True)
    await admin.set_option("TelegramBotToken", BOT_TOKEN)
    await admin.http.get("/api/oauth/telegram/bind", params=widget(), headers={"New-Api-User": str(admin.user_id)})
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        forged = {**widget(age=3), "id": "1"}  # another user id under the old hash
        other_bot = widget(age=4, token="999:another-bot")
        stale = widget(age=7200)
        for data, word in ((forged, "signed"), (other_bot, "signed"), (stale, "too old")):
            answer = (await http.get("/api/oauth/telegram/login", params=data)).json()
            assert answer["success"] is False and word in answer["message"], answer
        once = widget(age=5)
        assert (await http.get("/api/oauth/telegram/login", params=once)).json()["success"] is True
        for _ in range(2):  # a leaked callback URL does not log in again
            replay = (await http.get("/api/oauth/telegram/login", params=once)).json()
            assert replay["success"] is False and "used already" in replay["message"]
