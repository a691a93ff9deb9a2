"""new-api's console pages that call routes of features Faregate has not (issue 28). The wallet
page asks ``GET /api/subscription/plans`` and ``/api/subscription/self`` on every load, for every
user; the system settings page lists custom OAuth providers. Each was a 404 and an error in the
console. They answer "none" as new-api does with nothing configured (the billing preference that
is true here, ``wallet_only``); buying, adding or administering is refused in the envelope,
naming the missing feature."""

from __future__ import annotations

import httpx

from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer


async def _user(gateway: GatewayServer, admin: AdminClient, name: str = "wally") -> AdminClient:
    await admin.ok("POST", "/api/user/", json={"username": name, "password": ROOT_PASSWORD})
    client = AdminClient(gateway.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login", json={"username": name,
                                                                       "password": ROOT_PASSWORD}))["id"]
    return client


async def test_the_wallet_page_s_subscription_calls_answer_none(gateway: GatewayServer, admin: AdminClient) -> None:
    wally = await _user(gateway, admin)
    assert await wally.ok("GET", "/api/subscription/plans") == []
    assert await wally.ok("GET", "/api/subscription/self") == {
        "billing_preference": "wallet_only", "subscriptions": [], "all_subscriptions": []}
    # the wallet's own preference is kept; another one names the missing feature
    kept = await wally.ok("PUT", "/api/subscription/self/preference", json={"billing_preference": "wallet_only"})
    assert kept["billing_preference"] == "wallet_only"
    refused = await wally.call("PUT", "/api/subscription/self/preference",
                               json={"billing_preference": "subscription_first"})
    assert refused == {"success": False, "message": "subscriptions are not available: Faregate bills the wallet only"}


async def test_buying_and_administering_subscriptions_is_refused_by_name(gateway: GatewayServer,
                                                                         admin: AdminClient) -> None:
    wally = await _user(gateway, admin, "payer")
    bought = await wally.call("POST", "/api/subscription/epay/pay", json={"plan_id": 1})
    assert bought["success"] is False and "subscriptions are not available" in bought["message"]
    for method, path in (("GET", "/api/subscription/admin/plans"), ("PUT", "/api/subscription/admin/plans/3"),
                         ("POST", "/api/subscription/admin/bind")):
        answer = await admin.call(method, path, json={})
        assert answer["success"] is False and "subscriptions are not available" in answer["message"], path
    # an ordinary user is not told more than any admin route tells them
    assert (await wally.call("GET", "/api/subscription/admin/plans"))["message"].startswith("permission denied")


async def test_subscription_routes_need_a_login(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as anonymous:
        resp = await anonymous.get("/api/subscription/plans")
    assert resp.json()["success"] is False


async def test_custom_oauth_providers_list_none_and_refuse_changes_by_name(gateway: GatewayServer,
                                                                          admin: AdminClient) -> None:
    """new-api's system settings page lists custom OAuth providers on every load (it was a 404)."""
    assert await admin.ok("GET", "/api/custom-oauth-provider/") == []
    for method, path in (("POST", "/api/custom-oauth-provider/"), ("PUT", "/api/custom-oauth-provider/1"),
                         ("DELETE", "/api/custom-oauth-provider/1"), ("POST", "/api/custom-oauth-provider/discovery"),
                         ("GET", "/api/custom-oauth-provider/1")):
        answer = await admin.call(method, path, json={"name": "corp"})
        assert answer["success"] is False and "custom OAuth providers are not available" in answer["message"], path
    wally = await _user(gateway, admin, "curious")
    assert (await wally.call("GET", "/api/custom-oauth-provider/"))["message"].startswith("permission denied")


async def test_task_and_midjourney_lists_are_empty_pages(gateway: GatewayServer, admin: AdminClient) -> None:
    """The console's task and Midjourney pages (a bookmark, or the sidebar) were a 404 and an error."""
    for path in ("/api/task/", "/api/mj/", "/api/task/self", "/api/mj/self"):
        page = await admin.ok("GET", path, params={"p": 2, "page_size": 20, "channel_id": "", "task_id": ""})
        assert page == {"page": 2, "page_size": 20, "total": 0, "items": []}, path
    wally = await _user(gateway, admin, "tasker")
    assert (await wally.ok("GET", "/api/task/self"))["items"] == []
    assert (await wally.call("GET", "/api/task/"))["message"].startswith("permission denied")
