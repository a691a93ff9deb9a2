"""Stripe top-ups end to end: a real gateway, a fake Stripe recording Checkout Sessions, and
events signed as Stripe signs them. Paid once, whatever is replayed; forged, stale, tampered,
cross-provider and mismatched events credit nothing."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from typing import Any

import pytest
import pytest_asyncio

from faregate.api import Quote, WebhookRejected, create_top_up
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.payments import (
    declare_oversized,
    order,
    quota_of,
    replay,
    send_chunked,
    top_up_logs,
    user_session,
)
from faregate_payment_stripe import signature
from faregate_payment_stripe.testing import FakeStripe

SITE = "https://gate.example"
UNIT = 500_000  # QuotaPerUnit


@pytest_asyncio.fixture
async def stripe() -> AsyncIterator[FakeStripe]:
    async with FakeStripe() as fake:
        yield fake


@pytest_asyncio.fixture
async def server(make_gateway: Callable[..., Awaitable[GatewayServer]], stripe: FakeStripe) -> GatewayServer:
    return await make_gateway(settings={"stripe_api_base": stripe.base_url})


@pytest_asyncio.fixture
async def root(server: GatewayServer, stripe: FakeStripe) -> AsyncIterator[AdminClient]:
    client = AdminClient(server.base_url)
    await client.setup_root()
    for key, value in {"ServerAddress": SITE, "StripeApiSecret": stripe.api_key,
                       "StripeWebhookSecret": stripe.webhook_secret, "StripeCurrency": "USD",
                       "StripeUnitPrice": "1"}.items():
        await client.set_option(key, value)
    yield client
    await client.close()


@pytest_asyncio.fixture
async def buyer(server: GatewayServer, root: AdminClient) -> AsyncIterator[AdminClient]:
    client = await user_session(server, root, "buyer", email="buyer@example.com")
    yield client
    await client.close()


async def pay(buyer: AdminClient, amount: int, **extra: Any) -> dict[str, Any]:
    return await buyer.call("POST", "/api/user/stripe/pay", json={"amount": amount, "payment_method": "stripe",
                                                                  **extra})


async def test_checkout_then_paid_event_credits_once(server: GatewayServer, root: AdminClient, buyer: AdminClient,
                                                     stripe: FakeStripe) -> None:
    answer = await pay(buyer, 10)
    assert answer["message"] == "success" and "success" not in answer, answer
    session = stripe.sessions[-1]
    assert answer["data"] == {"pay_link": session["url"]}
    form = session["form"]
    trade_no = session["client_reference_id"]
    assert trade_no.startswith("ref_") and form["metadata[trade_no]"] == trade_no
    assert form["line_items[0][price_data][unit_amount]"] == "1000" and form["line_items[0][price_data][currency]"] \
        == "usd"
    assert form["success_url"] == SITE + "/console/log" and form["customer_email"] == "buyer@example.com"
    assert stripe.requests[-1]["headers"]["idempotency-key"] == trade_no
    pending = await order(root, trade_no)
    assert pending | {"id": 0, "create_time": 0} == {
        "id": 0, "user_id": buyer.user_id, "amount": 10, "money": 10.0, "currency": "USD", "quota": 10 * UNIT,
        "trade_no": trade_no, "payment_method": "stripe", "payment_provider": "stripe", "create_time": 0,
        "complete_time": 0, "status": "pending"}
    before = await quota_of(root, buyer.user_id)

    event = stripe.event("checkout.session.completed", session)
    sender = stripe.sender(server.base_url)
    first = await sender.send(event)
    assert first.status_code == 200 and first.json()["success"] is True
    assert await quota_of(root, buyer.user_id) == before + 10 * UNIT
    done = await order(root, trade_no)
    assert done["status"] == "success" and done["complete_time"] > 0
    logs = await top_up_logs(root, buyer.user_id)
    assert len(logs) == 1 and logs[0]["quota"] == 10 * UNIT and trade_no in logs[0]["content"]
    assert json.loads(logs[0]["other"])["event_id"] == event["id"]

    # Stripe retries, an attacker replays: every answer 2xx, nothing more credited
    assert set(await replay(lambda: sender.send(event))) == {200}
    assert await quota_of(root, buyer.user_id) == before + 10 * UNIT
    assert len(await top_up_logs(root, buyer.user_id)) == 1
    # the user sees the order among their own
    mine = await buyer.ok("GET", "/api/user/topup/self")
    assert [item["trade_no"] for item in mine["items"]] == [trade_no]


async def test_quote_and_top_up_info(root: AdminClient, buyer: AdminClient) -> None:
    assert await buyer.call("POST", "/api/user/stripe/amount", json={"amount": 10}) == {"message": "success",
                                                                                          "data": "10.00"}
    await root.set_option("payment_setting.amount_discount", {"10": 0.9})
    await root.set_option("TopupGroupRatio", {"default": 2})
    assert (await buyer.call("POST", "/api/user/cardpay/amount", json={"amount": 10}))["data"] == "18.00"
    await root.set_option("StripeMinTopUp", "5")
    low = await buyer.call("POST", "/api/user/stripe/amount", json={"amount": 4})
    assert low["message"] == "error" and "at least 5" in low["data"]
    info = await buyer.ok("GET", "/api/user/topup/info")
    assert info["enable_stripe_topup"] is True and info["stripe_min_topup"] == 5
    assert {"name": "Stripe", "type": "stripe", "color": "#635BFF", "min_topup": "5"} in info["pay_methods"]
    assert info["discount"] == {"10": 0.9} and info["amount_options"] == [10, 20, 50, 100, 200, 500]
    # the secrets are never listed
    listed = {item["key"] for item in await root.ok("GET", "/api/option/")}
    assert "StripeUnitPrice" in listed and not {"StripeApiSecret", "StripeWebhookSecret"} & listed


async def test_empty_secret_refuses_to_enable(server: GatewayServer, root: AdminClient, buyer: AdminClient,
                                              stripe: FakeStripe) -> None:
    await pay(buyer, 3)
    session = stripe.sessions[-1]
    await root.set_option("StripeWebhookSecret", "")
    info = await buyer.ok("GET", "/api/user/topup/info")
    assert info["enable_stripe_topup"] is False and all(m["type"] != "stripe" for m in info["pay_methods"])
    refused = await pay(buyer, 3)
    assert refused == {"message": "error", "data": "Stripe is not set up: StripeWebhookSecret is empty"}
    assert len(stripe.sessions) == 1
    # an event "signed" with the empty secret: refused unverified
    forged = await stripe.sender(server.base_url).send(stripe.event("checkout.session.completed", session),
                                                       secret="")
    assert forged.status_code == 400
    assert (await order(root, session["client_reference_id"]))["status"] == "pending"


async def test_forged_stale_and_tampered_events_are_refused(server: GatewayServer, root: AdminClient,
                                                            buyer: AdminClient, stripe: FakeStripe) -> None:
    await pay(buyer, 5)
    session = stripe.sessions[-1]
    sender = stripe.sender(server.base_url)
    event = stripe.event("checkout.session.completed", session)
    body = json.dumps(event).encode()
    before = await quota_of(root, buyer.user_id)
    now = int(time.time())
    attempts = [
        sender.send(event, secret="whsec_guessed"),  # forged
        sender.send(event, timestamp=now - 330),  # stale (replayed after the tolerance)
        sender.send(event, timestamp=now + 330),  # from the future (30 s of margin: the clock moves on)
        sender.send(event, headers={"Stripe-Signature": ""}),  # unsigned
        sender.send(event, headers={"Stripe-Signature": f"t={now},v0=abc"}),  # no v1
        # signed, then changed on the way
        sender.send(body.replace(b'"amount_total": 500', b'"amount_total": 99999'),
                    headers=sender.signed(body)),
    ]
    for sent in attempts:
        resp = await sent
        assert resp.status_code == 400 and resp.json()["success"] is False, resp.text
    assert await quota_of(root, buyer.user_id) == before
    # a second valid signature among several is accepted, as Stripe rolls secrets
    t = int(time.time())
    roll = f"t={t},v1={signature.compute('whsec_old', t, body)},v1={signature.compute(stripe.webhook_secret, t, body)}"
    assert (await sender.send(event, headers={"Stripe-Signature": roll})).status_code == 200
    assert await quota_of(root, buyer.user_id) == before + 5 * UNIT
    # just inside the 300 s tolerance (a retry Stripe sent 290 s ago): accepted and credited
    await pay(buyer, 4)
    late = await sender.send(stripe.event("checkout.session.completed", stripe.sessions[-1]),
                             timestamp=int(time.time()) - 290)
    assert late.status_code == 200, late.text
    assert await quota_of(root, buyer.user_id) == before + 9 * UNIT


async def test_cross_provider_and_mismatched_orders_are_refused(server: GatewayServer, root: AdminClient,
                                                                buyer: AdminClient, stripe: FakeStripe) -> None:
    # an Epay order: a Stripe event naming it must not complete it (new-api's CVE-2026-41432)
    assert buyer.user_id is not None
    epay_order = await create_top_up(buyer.user_id, "epay", Quote(amount=50, money=Decimal("365.00"), currency="CNY",
                                                                  quota=50 * UNIT, payment_method="alipay"),
                                     "USR2NOepay0001")
    await pay(buyer, 7)
    session = stripe.sessions[-1]
    sender = stripe.sender(server.base_url)
    before = await quota_of(root, buyer.user_id)
    cross = stripe.event("checkout.session.completed", session, client_reference_id=epay_order.trade_no,
                         amount_total=36500, currency="cny")
    assert (await sender.send(cross)).status_code == 400
    assert (await order(root, epay_order.trade_no))["status"] == "pending"
    for changes in ({"amount_total": 1}, {"currency": "eur"}, {"client_reference_id": "ref_unknown"}):
        resp = await sender.send(stripe.event("checkout.session.completed", session, **changes))
        assert resp.status_code == 400, changes
    # completed but not paid yet (a delayed method): acknowledged, nothing credited
    unpaid = stripe.event("checkout.session.completed", session, payment_status="unpaid")
    assert (await sender.send(unpaid)).status_code == 200
    assert await quota_of(root, buyer.user_id) == before
    assert (await order(root, session["client_reference_id"]))["status"] == "pending"
    # then it expires: a late "paid" event for it credits nothing
    assert (await sender.send(stripe.event("checkout.session.expired", session))).status_code == 200
    assert (await order(root, session["client_reference_id"]))["status"] == "expired"
    assert (await sender.send(stripe.event("checkout.session.completed", session))).status_code == 400
    assert await quota_of(root, buyer.user_id) == before


async def test_webhook_body_is_capped_before_reading(server: GatewayServer, root: AdminClient) -> None:
    status, body = await declare_oversized(server.base_url + "/api/stripe/webhook", 10 * 1024 * 1024,
                                           {"Stripe-Signature": "t=1,v1=00"})
    assert status == 413 and b"too large" in body
    status, _ = await declare_oversized(server.base_url + "/api/stripe/webhook", 64 * 1024 + 1)
    assert status == 413
    status, _ = await send_chunked(server.base_url + "/api/stripe/webhook", 64 * 1024 + 1)  # no declared length
    assert status == 413


async def test_return_urls_stay_on_the_site_and_gateway_errors(root: AdminClient, buyer: AdminClient,
                                                               stripe: FakeStripe) -> None:
    ours = await pay(buyer, 2, success_url=SITE + "/console/topup?paid=1")
    assert ours["message"] == "success" and stripe.sessions[-1]["form"]["success_url"] == SITE + "/console/topup?paid=1"
    elsewhere = await pay(buyer, 2, cancel_url="https://evil.example/phish")
    assert elsewhere["message"] == "error" and "on this site" in elsewhere["data"]
    stripe.fail_next(500, "boom")
    failed = await pay(buyer, 2)
    assert failed == {"message": "error", "data": "Stripe refused the checkout (HTTP 500)"}
    page = await root.ok("GET", "/api/user/topup")
    assert sorted(item["status"] for item in page["items"]) == ["failed", "failed", "pending"]
    # a bad body is a 400 naming the field; a price id sells the Price
    assert (await buyer.http.post("/api/user/stripe/pay", json={"amount": "2"},
                                  headers={"New-Api-User": str(buyer.user_id)})).status_code == 400
    stripe.prices["price_1"] = (700, "usd")
    await root.set_option("StripePriceId", "price_1")
    await root.set_option("StripeUnitPrice", "7")
    assert (await pay(buyer, 3))["message"] == "success"
    form = stripe.sessions[-1]["form"]
    assert form["line_items[0][price]"] == "price_1" and form["line_items[0][quantity]"] == "3"
    # with nowhere to send the user back, no session is made
    await root.set_option("ServerAddress", "")
    made = len(stripe.sessions)
    nowhere = await pay(buyer, 3)
    assert nowhere["message"] == "error" and "ServerAddress" in nowhere["data"]
    assert len(stripe.sessions) == made


async def test_both_pay_and_webhook_paths_complete_orders(server: GatewayServer, root: AdminClient,
                                                          buyer: AdminClient, stripe: FakeStripe) -> None:
    """Stripe's own paths and the spec's neutral aliases (``/api/user/cardpay/pay``,
    ``/api/cardpay/webhook``), each pair end to end: a session made, its paid event credited once."""
    for amount, (pay_path, hook_path) in enumerate([("/api/user/stripe/pay", "/api/stripe/webhook"),
                                                    ("/api/user/cardpay/pay", "/api/cardpay/webhook")], start=1):
        made = len(stripe.sessions)
        answer = await buyer.call("POST", pay_path, json={"amount": amount, "payment_method": "stripe"})
        assert answer["message"] == "success" and len(stripe.sessions) == made + 1, answer
        session = stripe.sessions[-1]
        assert answer["data"] == {"pay_link": session["url"]}
        assert (await order(root, session["client_reference_id"]))["amount"] == amount
        before = await quota_of(root, buyer.user_id)
        sender = stripe.sender(server.base_url, hook_path)
        event = stripe.event("checkout.session.completed", session)
        assert set(await replay(functools.partial(sender.send, event))) == {200}
        assert await quota_of(root, buyer.user_id) == before + amount * UNIT
        assert (await order(root, session["client_reference_id"]))["status"] == "success"


# ---- the signature alone -------------------------------------------------------------------------
SECRET = "whsec_unit"
BODY = b'{"id": "evt_1", "type": "checkout.session.completed"}'
NOW = 1_700_000_000


def _verify(header: str, *, body: bytes = BODY, now: float = NOW) -> None:
    signature.verify(body, header, SECRET, now)


def _v1(timestamp: int = NOW, secret: str = SECRET, body: bytes = BODY) -> str:
    # Stripe's scheme, computed here independently of signature.compute
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def test_signature_accepts_any_matching_v1_within_the_tolerance() -> None:
    _verify(f"t={NOW},v1={_v1()}")
    assert signature.header(SECRET, NOW, BODY) == f"t={NOW},v1={_v1()}"
    # several v1 (a secret being rolled), the right one anywhere among them; other schemes ignored
    _verify(f"t={NOW},v1={_v1(secret='whsec_old')},v0=deadbeef,v1={_v1()}")
    _verify(f"v1={_v1()}, t={NOW}")  # order and spaces do not matter
    _verify(f"t={NOW},v1={_v1()}", now=NOW + 300)  # the tolerance's edges are inside
    _verify(f"t={NOW},v1={_v1()}", now=NOW - 300)


@pytest.mark.parametrize(("header", "why"), [
    ("", "missing"),
    ("x" * 2049, "oversized"),
    (f"t={NOW},v0={_v1()}", "malformed"),  # the right digest under another scheme
    (f"t={NOW},v2={_v1()}", "malformed"),
    (f"v1={_v1()}", "malformed"),  # no timestamp
    (f"t=,v1={_v1()}", "malformed"),
    (f"t=-{NOW},v1={_v1()}", "malformed"),
    (f"t={NOW}.5,v1={_v1()}", "malformed"),
    (f"t=\u0661\u0662,v1={_v1()}", "malformed"),  # non-ASCII digits
    (f"t={NOW},v1=", "malformed"),
    (f"t={NOW}", "malformed"),
    (f"t{NOW};v1{_v1()}", "malformed"),
    (f"t={NOW},v1={_v1(secret='whsec_other')}", "bad signature"),
    (f"t={NOW + 1},v1={_v1()}", "bad signature"),  # the timestamp is signed too
    (f"t={NOW},v1={_v1().upper()}", "bad signature"),
    (f"t={NOW},v1={_v1(body=BODY + b' ')}", "bad signature"),
])
def test_signature_refuses_malformed_and_wrong_headers(header: str, why: str) -> None:
    with pytest.raises(WebhookRejected, match=why) as refused:
        _verify(header)
    assert refused.value.status == 400


def test_signature_refuses_stale_future_and_unsecreted() -> None:
    for now in (NOW + 301, NOW - 301):
        with pytest.raises(WebhookRejected, match="stale"):
            _verify(f"t={NOW},v1={_v1()}", now=now)
    with pytest.raises(WebhookRejected, match="no webhook secret"):
        signature.verify(BODY, f"t={NOW},v1={_v1(secret='')}", "", NOW)
