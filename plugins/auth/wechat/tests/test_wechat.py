"""WeChat login and binding against a local WeChat server: sign-up on first login (with an
invitation code), the same account afterwards, binding to a logged-in user, a wrong code
refused."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest_asyncio

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_auth_wechat.testing import TOKEN, FakeWeChatServer


@pytest_asyncio.fixture
async def wechat(admin: AdminClient) -> AsyncIterator[FakeWeChatServer]:
    async with FakeWeChatServer() as server:
        await admin.set_option("WeChatAuthEnabled", True)
        await admin.set_option("WeChatServerAddress", server.base_url)
        await admin.set_option("WeChatServerToken", TOKEN)
        yield server


async def test_sign_up_log_in_and_bind(gateway: GatewayServer, admin: AdminClient, wechat: FakeWeChatServer) -> None:
    wechat.codes.update({"111111": "openid-a", "222222": "openid-a", "333333": "openid-b"})
    for switch in ("PasswordLoginEnabled", "PasswordRegisterEnabled"):  # an SSO-only site: WeChat still signs up
        await admin.set_option(switch, False)
    await admin.set_option("QuotaForInvitee", "70")
    await admin.set_option("QuotaForInviter", "900")
    aff = await admin.ok("GET", "/api/user/aff")
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        first = (await http.get("/api/oauth/wechat", params={"code": "111111", "aff": aff})).json()
        assert first["success"] is True and first["data"]["username"].startswith("wechat_")
        invitee = await admin.ok("GET", f"/api/user/{first['data']['id']}")
        assert (invitee["inviter_id"], invitee["quota"]) == (admin.user_id, 70)  # the invitation counts
        assert (await admin.ok("GET", "/api/user/self"))["aff_quota"] == 900
        again = (await http.get("/api/oauth/wechat", params={"code": "222222"})).json()
        assert again["data"]["id"] == first["data"]["id"]
        wrong = (await http.get("/api/oauth/wechat", params={"code": "111111"})).json()  # used up
        assert wrong["success"] is False and "expired" in wrong["message"]
        assert (await http.get("/api/oauth/wechat")).status_code == 400
    await admin.ok("POST", "/api/oauth/wechat/bind", json={"code": "333333"})
    assert (await admin.ok("GET", "/api/user/self"))["wechat_id"] == "openid-b"
    wechat.codes["444444"] = "openid-a"
    taken = await admin.call("POST", "/api/oauth/wechat/bind", json={"code": "444444"})
    assert taken["success"] is False


async def test_a_wrong_server_token_is_refused(gateway: GatewayServer, admin: AdminClient,
                                               wechat: FakeWeChatServer) -> None:
    await admin.set_option("WeChatServerToken", "not-the-token")
    wechat.codes["555555"] = "openid-c"
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        answer = (await http.get("/api/oauth/wechat", params={"code": "555555"})).json()
        assert answer["success"] is False and "unauthorized" in answer["message"]
