"""new-api's ``token_setting.max_user_tokens`` (issue 28 item 4): a user at the limit cannot
create another API key, refused with new-api's message; the limit is per user, and raising it
(or deleting a key) lets the next one through."""

from __future__ import annotations

import httpx

from faregate.testing.harness import AdminClient, GatewayServer

KEY = {"name": "k", "remain_quota": 0, "unlimited_quota": True, "expired_time": -1}


async def test_a_key_beyond_the_limit_is_refused_with_new_apis_message(gateway: GatewayServer,
                                                                       admin: AdminClient) -> None:
    await admin.set_option("token_setting.max_user_tokens", 2)
    first = await admin.ok("POST", "/api/token/", json=KEY)
    await admin.ok("POST", "/api/token/", json=KEY)
    refused = await admin.call("POST", "/api/token/", json=KEY)
    assert refused == {"success": False, "message": "已达到最大令牌数量限制 (2)"}
    # another user has a limit of their own
    await admin.ok("POST", "/api/user/", json={"username": "bob", "password": "bob-password"})
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=30) as bob:
        body = (await bob.post("/api/user/login", json={"username": "bob", "password": "bob-password"})).json()
        bob.headers["New-Api-User"] = str(body["data"]["id"])
        assert (await bob.post("/api/token/", json=KEY)).json()["success"] is True
    # a key deleted makes room; a higher limit too
    await admin.ok("DELETE", f"/api/token/{first['id']}")
    await admin.ok("POST", "/api/token/", json=KEY)
    await admin.set_option("token_setting.max_user_tokens", 3)
    await admin.ok("POST", "/api/token/", json=KEY)
    assert (await admin.call("POST", "/api/token/", json=KEY))["message"] == "已达到最大令牌数量限制 (3)"


async def test_the_limit_is_checked_and_listed(admin: AdminClient) -> None:
    options = {o["key"]: o["value"] for o in await admin.ok("GET", "/api/option/")}
    assert options["token_setting.max_user_tokens"] == "1000"  # new-api's default
    for value in ("-1", "x", "1.5"):
        resp = await admin.call("PUT", "/api/option/", json={"key": "token_setting.max_user_tokens", "value": value})
        assert resp["success"] is False and "token_setting.max_user_tokens" in resp["message"]
    await admin.set_option("token_setting.max_user_tokens", 0)
    assert (await admin.call("POST", "/api/token/", json=KEY))["message"] == "已达到最大令牌数量限制 (0)"
