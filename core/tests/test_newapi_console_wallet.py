"""new-api's wallet page (issue 28): it asks ``GET /api/subscription/plans`` and
``GET /api/subscription/self`` on every load, for every user. Faregate has no subscriptions, so
they answer what new-api answers with no plan (none, none) and the preference that is true
here, ``wallet_only``, instead of a 404 that put an error in every user's console; buying or
administering a subscription is refused in the envelope, naming the missing feature."""

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
