"""Creem top-ups end to end: a real gateway, a fake Creem recording checkouts, and events signed
as Creem signs them (``creem-signature``). Paid once, whatever is replayed; forged, tampered,
cross-provider and mismatched events credit nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from typing import Any

import pytest_asyncio

from faregate.api import Quote, create_top_up
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.payments import declare_oversized, order, quota_of, replay, top_up_logs, user_session
from faregate_payment_creem.testing import FakeCreem

QUOTA = 2_500_000
PRODUCTS = [{"productId": "prod_small", "name": "Small pack", "price": 4.99, "currency": "USD", "quota": QUOTA},
            {"productId": "prod_eur", "name": "Euro pack", "price": 9, "currency": "EUR", "quota": 2 * QUOTA}]


@pytest_asyncio.fixture
async def creem() -> AsyncIterator[FakeCreem]:
    async with FakeCreem(products={"prod_small": (499, "USD"), "prod_eur": (900, "EUR")}) as fake:
        yield fake


@pytest_asyncio.fixture
async def server(make_gateway: Callable[..., Awaitable[GatewayServer]], creem: FakeCreem) -> GatewayServer:
    return await make_gateway(settings={"creem_api_base": creem.base_url})


@pytest_asyncio.fixture
async def root(server: GatewayServer, creem: FakeCreem) -> AsyncIterator[AdminClient]:
    client = AdminClient(server.base_url)
    await client.setup_root()
    await client.set_option("CreemApiKey", creem.api_key)
    await client.set_option("CreemWebhookSecret", creem.webhook_secret)
    await client.set_option("CreemProducts", PRODUCTS)
    yield client
    await client.close()


@pytest_asyncio.fixture
async def buyer(server: GatewayServer, root: AdminClient) -> AsyncIterator[AdminClient]:
    client = await user_session(server, root, "buyer", email="buyer@example.com")
    yield client
    await client.close()


async def pay(buyer: AdminClient, product: str = "prod_small") -> dict[str, Any]:
    return await buyer.call("POST", "/api/user/creem/pay", json={"product_id": product, "payment_method": "creem"})


async def test_checkout_then_paid_event_credits_once(server: GatewayServer, root: AdminClient, buyer: AdminClient,
                                                     creem: FakeCreem) -> None:
    answer = await pay(buyer)
    checkout = creem.checkouts[-1]
    trade_no = checkout["request_id"]
    assert answer == {"message": "success", "data": {"checkout_url": checkout["checkout_url"], "order_id": trade_no}}
    assert checkout["request"]["customer"] == {"email": "buyer@example.com"}
    assert creem.requests[-1]["headers"]["x-api-key"] == creem.api_key
    pending = await order(root, trade_no)
    assert (pending["amount"], pending["money"], pending["currency"], pending["quota"], pending["status"]) == (
        QUOTA, 4.99, "USD", QUOTA, "pending")
    before = await quota_of(root, buyer.user_id)
    event = creem.completed_event(checkout)
    sender = creem.sender(server.base_url)
    assert set(await replay(lambda: sender.send(event))) == {200}
    assert await quota_of(root, buyer.user_id) == before + QUOTA
    assert (await order(root, trade_no))["status"] == "success"
    logs = await top_up_logs(root, buyer.user_id)
    assert len(logs) == 1 and json.loads(logs[0]["other"])["reference"] == event["object"]["order"]["id"]


async def test_top_up_info_and_unknown_products(root: AdminClient, buyer: AdminClient) -> None:
    info = await buyer.ok("GET", "/api/user/topup/info")
    assert info["enable_creem_topup"] is True
    assert info["creem_products"][0] == {"productId": "prod_small", "name": "Small pack", "price": 4.99,
                                         "currency": "USD", "quota": QUOTA}
    assert await pay(buyer, "prod_nope") == {"message": "error", "data": "no such product"}
    bad = await root.call("PUT", "/api/option/", json={"key": "CreemProducts", "value": '[{"productId": "x"}]'})
    assert bad["success"] is False and "price" in bad["message"]
    listed = {item["key"] for item in await root.ok("GET", "/api/option/")}
    assert "CreemProducts" in listed and not {"CreemApiKey", "CreemWebhookSecret"} & listed


async def test_empty_secret_refuses_to_enable(server: GatewayServer, root: AdminClient, buyer: AdminClient,
                                              creem: FakeCreem) -> None:
    await pay(buyer)
    checkout = creem.checkouts[-1]
    await root.set_option("CreemWebhookSecret", "")
    assert (await buyer.ok("GET", "/api/user/topup/info"))["enable_creem_topup"] is False
    assert await pay(buyer) == {"message": "error", "data": "Creem is not set up: CreemWebhookSecret is empty"}
    resp = await creem.sender(server.base_url).send(creem.completed_event(checkout), secret="")
    assert resp.status_code == 400
    assert (await order(root, checkout["request_id"]))["status"] == "pending"


async def test_forged_tampered_cross_provider_and_mismatched_events(server: GatewayServer, root: AdminClient,
                                                                    buyer: AdminClient, creem: FakeCreem) -> None:
    await pay(buyer)
    checkout = creem.checkouts[-1]
    sender = creem.sender(server.base_url)
    event = creem.completed_event(checkout)
    body = json.dumps(event).encode()
    before = await quota_of(root, buyer.user_id)
    assert (await sender.send(event, secret="guessed")).status_code == 401
    assert (await sender.send(event, headers={"creem-signature": ""})).status_code == 401
    tampered = body.replace(b'"amount_paid": 499', b'"amount_paid": 1')
    assert (await sender.send(tampered, headers={"creem-signature": sender.sign(body)})).status_code == 401
    # signed, but not what the order costs, or not paid
    for changes in ({"amount_paid": 1}, {"currency": "EUR"}):
        assert (await sender.send(creem.completed_event(checkout, **changes))).status_code == 400, changes
    assert (await sender.send(creem.completed_event(checkout, status="pending"))).status_code == 200
    # a Stripe order: a Creem event naming it completes nothing
    assert buyer.user_id is not None
    stripe_order = await create_top_up(buyer.user_id, "stripe", Quote(amount=5, money=Decimal("4.99"), currency="USD",
                                                                       quota=QUOTA, payment_method="stripe"),
                                       "ref_stripe_order_1")
    cross = creem.completed_event(checkout)
    cross["object"]["request_id"] = stripe_order.trade_no
    assert (await sender.send(cross)).status_code == 400
    assert (await order(root, stripe_order.trade_no))["status"] == "pending"
    assert await quota_of(root, buyer.user_id) == before
    # other event types are acknowledged and change nothing
    refund = {"id": "evt_r", "eventType": "refund.created", "object": {"id": "ref_1"}}
    assert (await sender.send(refund)).status_code == 200
    assert (await order(root, checkout["request_id"]))["status"] == "pending"


async def test_webhook_body_is_capped_before_reading(server: GatewayServer, root: AdminClient) -> None:
    for path in ("/api/creem/webhook", "/api/hostedpay/webhook"):
        status, _ = await declare_oversized(server.base_url + path, 64 * 1024 + 1, {"creem-signature": "00"})
        assert status == 413


async def test_hostedpay_aliases_and_gateway_errors(server: GatewayServer, root: AdminClient, buyer: AdminClient,
                                                   creem: FakeCreem) -> None:
    """The spec's neutral paths end to end: an order made on /api/user/hostedpay/pay and paid by
    an event delivered to /api/hostedpay/webhook is credited, once."""
    answer = await buyer.call("POST", "/api/user/hostedpay/pay", json={"product_id": "prod_eur"})
    assert answer["message"] == "success"
    trade_no = answer["data"]["order_id"]
    assert (await order(root, trade_no))["currency"] == "EUR"
    before = await quota_of(root, buyer.user_id)
    sender = creem.sender(server.base_url, "/api/hostedpay/webhook")
    event = creem.completed_event(creem.checkouts[-1])
    assert set(await replay(lambda: sender.send(event))) == {200}
    assert await quota_of(root, buyer.user_id) == before + 2 * QUOTA
    assert (await order(root, trade_no))["status"] == "success"
    assert len(await top_up_logs(root, buyer.user_id)) == 1
    creem.fail_next(500, "down")
    assert await pay(buyer) == {"message": "error", "data": "Creem refused the checkout (HTTP 500)"}
