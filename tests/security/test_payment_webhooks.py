"""Attacks on the payment webhooks (issue 17; new-api's CVE-2026-41432, GHSA-v828-m3pf-vq9q and
issues #4279/#4350), with the three gateways installed together:

* no provider enables while a secret is empty, and its callbacks are refused unverified;
* an event of one provider never completes another provider's order (every pair);
* bodies over the cap are refused before they are read, on every webhook path;
* nothing from a callback (body, signature, query) is logged before its signature passed, not even
  by Hypercorn's optional access log;
* a signed event replayed in sequence and in parallel, on both of a provider's paths and racing
  an admin's manual completion, credits once: on SQLite, MariaDB and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
import pytest_asyncio
from hypercorn.config import Config
from hypercorn.logging import Logger as HypercornLogger

from faregate.contracts.payments import Quote
from faregate.db import models as m
from faregate.payments.orders import create_top_up
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.newapi_db import postgres_database
from faregate.testing.payments import declare_oversized, quota_of, replay, user_session
from faregate_payment_creem.testing import FakeCreem
from faregate_payment_epay.testing import FakeEpay
from faregate_payment_stripe.testing import FakeStripe

UNIT = 500_000
MARKER = "MARKER-7f3a9c-should-never-be-logged"
WEBHOOKS = ["/api/stripe/webhook", "/api/cardpay/webhook", "/api/creem/webhook", "/api/hostedpay/webhook",
            "/api/user/epay/notify"]


class Fakes:
    def __init__(self, stripe: FakeStripe, creem: FakeCreem, epay: FakeEpay) -> None:
        self.stripe, self.creem, self.epay = stripe, creem, epay

    def settings(self) -> dict[str, Any]:
        return {"stripe_api_base": self.stripe.base_url, "creem_api_base": self.creem.base_url}

    async def configure(self, admin: AdminClient, server: GatewayServer) -> None:
        options = {"ServerAddress": server.base_url, "StripeApiSecret": self.stripe.api_key,
                   "StripeWebhookSecret": self.stripe.webhook_secret, "StripeCurrency": "USD", "StripeUnitPrice": "1",
                   "CreemApiKey": self.creem.api_key, "CreemWebhookSecret": self.creem.webhook_secret,
                   "CreemProducts": [{"productId": "prod_1", "name": "One", "price": 5, "currency": "USD",
                                      "quota": 5 * UNIT}],
                   "PayAddress": self.epay.base_url, "EpayId": self.epay.pid, "EpayKey": self.epay.key}
        for key, value in options.items():
            await admin.set_option(key, value)


@pytest_asyncio.fixture
async def fakes() -> AsyncIterator[Fakes]:
    async with FakeStripe() as stripe, FakeCreem(products={"prod_1": (500, "USD")}) as creem, FakeEpay() as epay:
        yield Fakes(stripe, creem, epay)


async def _deploy(make_gateway: Callable[..., Awaitable[GatewayServer]], fakes: Fakes,
                  db_url: str = "") -> tuple[GatewayServer, AdminClient]:
    server = await make_gateway(db_url=db_url, settings=fakes.settings())
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    return server, admin


async def test_no_provider_enables_with_an_empty_secret(make_gateway: Any, fakes: Fakes) -> None:
    server, admin = await _deploy(make_gateway, fakes)
    buyer = await user_session(server, admin, "buyer")
    info = await buyer.ok("GET", "/api/user/topup/info")
    assert (info["enable_online_topup"], info["enable_stripe_topup"], info["enable_creem_topup"]) == (
        False, False, False)
    assert info["pay_methods"] == []
    for path, body, empty in (("/api/user/stripe/pay", {"amount": 1}, "StripeApiSecret"),
                              ("/api/user/creem/pay", {"product_id": "prod_1"}, "CreemApiKey"),
                              ("/api/user/pay", {"amount": 1, "payment_method": "alipay"}, "PayAddress")):
        answer = await buyer.call("POST", path, json=body)
        assert answer["message"] == "error" and f"{empty} is empty" in answer["data"], answer
    # a pending order of each, and events "signed" with the empty secrets new-api used to accept
    assert buyer.user_id is not None
    for provider, trade_no, currency in (("stripe", "ref_s", "USD"), ("creem", "ref_c", "USD"),
                                         ("epay", "USR1NOe", "CNY")):
        await create_top_up(buyer.user_id, provider, Quote(1, Decimal("1.00"), currency, UNIT, provider), trade_no)
    session = {"id": "cs_1", "client_reference_id": "ref_s", "amount_total": 100, "currency": "usd"}
    assert (await fakes.stripe.sender(server.base_url).send(
        fakes.stripe.event("checkout.session.completed", session), secret="")).status_code == 400
    checkout = {"id": "ch_1", "product": "prod_1", "request_id": "ref_c"}
    fakes.creem.products["prod_1"] = (100, "USD")
    assert (await fakes.creem.sender(server.base_url).send(fakes.creem.completed_event(checkout),
                                                          secret="")).status_code == 400
    form = {"out_trade_no": "USR1NOe", "type": "alipay", "name": "TUC1", "money": "1.00",
            "notify_url": server.base_url + "/api/user/epay/notify"}
    assert (await fakes.epay.notify(form, params=fakes.epay.notification(form, key="", pid=""))).text == "fail"
    assert await m.TopUp.filter(status="pending").count() == 3
    assert await quota_of(admin, buyer.user_id) == 0
    await buyer.close()
    await admin.close()


async def test_an_event_never_completes_another_providers_order(make_gateway: Any, fakes: Fakes) -> None:
    server, admin = await _deploy(make_gateway, fakes)
    await fakes.configure(admin, server)
    buyer = await user_session(server, admin, "buyer")
    assert buyer.user_id is not None
    # one pending order per provider, each priced so that the attacker's event names its exact money
    orders = {"stripe": "ref_stripe_1", "creem": "ref_creem_1", "epay": "USR9NOepay01"}
    for provider, trade_no in orders.items():
        currency = "CNY" if provider == "epay" else "USD"
        await create_top_up(buyer.user_id, provider, Quote(5, Decimal("5.00"), currency, 5 * UNIT, provider),
                            trade_no)

    async def stripe_event(trade_no: str, currency: str) -> httpx.Response:
        session = {"id": "cs_x", "client_reference_id": trade_no, "amount_total": 500, "currency": currency.lower()}
        return await fakes.stripe.sender(server.base_url).send(fakes.stripe.event("checkout.session.completed",
                                                                                  session))

    async def creem_event(trade_no: str, currency: str) -> httpx.Response:
        fakes.creem.products["prod_1"] = (500, currency)
        checkout = {"id": "ch_x", "product": "prod_1", "request_id": trade_no}
        return await fakes.creem.sender(server.base_url).send(fakes.creem.completed_event(checkout))

    async def epay_event(trade_no: str, currency: str) -> httpx.Response:
        form = {"out_trade_no": trade_no, "type": "alipay", "name": "TUC5", "money": "5.00",
                "notify_url": server.base_url + "/api/user/epay/notify"}
        return await fakes.epay.notify(form)

    senders = {"stripe": stripe_event, "creem": creem_event, "epay": epay_event}
    for attacker, send in senders.items():
        for victim, trade_no in orders.items():
            if victim == attacker:
                continue
            resp = await send(trade_no, "CNY" if victim == "epay" else "USD")
            refused = resp.text == "fail" if attacker == "epay" else resp.status_code == 400
            assert refused, (attacker, victim, resp.status_code, resp.text)
    assert await m.TopUp.filter(status="pending").count() == 3
    assert await quota_of(admin, buyer.user_id) == 0
    # each provider's own event still completes its own order
    for provider, trade_no in orders.items():
        await senders[provider](trade_no, "CNY" if provider == "epay" else "USD")
    assert await quota_of(admin, buyer.user_id) == 15 * UNIT
    await buyer.close()
    await admin.close()


async def test_oversized_bodies_are_refused_before_reading(make_gateway: Any, fakes: Fakes) -> None:
    server, admin = await _deploy(make_gateway, fakes)
    await fakes.configure(admin, server)
    for path in WEBHOOKS:
        for length in (64 * 1024 + 1, 100 * 1024 * 1024):
            status, _ = await declare_oversized(server.base_url + path, length)
            assert status == 413, (path, length)
    await admin.close()


async def test_nothing_from_a_callback_is_logged_before_verification(make_gateway: Any, fakes: Fakes,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    server, admin = await _deploy(make_gateway, fakes)
    await fakes.configure(admin, server)
    body = json.dumps({"id": MARKER, "type": "checkout.session.completed",
                       "data": {"object": {"client_reference_id": MARKER}}}).encode()
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        for path in WEBHOOKS:
            for headers in ({"Stripe-Signature": f"t=1,v1={MARKER}"}, {"creem-signature": MARKER}, {}):
                await http.post(path, content=body, headers=headers)
            await http.post(path, content=b"{" + MARKER.encode())  # not even JSON
        await http.get("/api/user/epay/notify", params={"out_trade_no": MARKER, "sign": MARKER, "money": "1"})
        await http.post("/api/user/epay/notify", data={"out_trade_no": MARKER, "sign": MARKER})
    # everything the gateway's process logged (not this test's own HTTP client)
    logged = "\n".join(record.getMessage() for record in caplog.records
                       if not record.name.startswith(("httpx", "httpcore")))
    assert "callback rejected" in logged  # the refusals are logged, by their reason only
    assert MARKER not in logged
    await admin.close()


async def test_replays_on_both_paths_racing_an_admin_credit_once(make_gateway: Any, fakes: Fakes) -> None:
    server, admin = await _deploy(make_gateway, fakes)
    await _credited_once(server, admin, fakes)


@pytest.mark.mariadb
async def test_concurrent_replays_credit_once_on_mariadb(mariadb_url: str, make_gateway: Any, fakes: Fakes) -> None:
    server, admin = await _deploy(make_gateway, fakes, mariadb_url)
    await _credited_once(server, admin, fakes)


@pytest.mark.postgres
async def test_concurrent_replays_credit_once_on_postgres(make_gateway: Any, fakes: Fakes) -> None:
    async with postgres_database() as url:
        server, admin = await _deploy(make_gateway, fakes, url)
        await _credited_once(server, admin, fakes)
        await server.stop()  # before the database is dropped


async def _credited_once(server: GatewayServer, admin: AdminClient, fakes: Fakes) -> None:
    await fakes.configure(admin, server)
    buyer = await user_session(server, admin, "buyer")
    answer = await buyer.call("POST", "/api/user/stripe/pay", json={"amount": 3})
    assert answer["message"] == "success", answer
    session = fakes.stripe.sessions[-1]
    trade_no = session["client_reference_id"]
    event = fakes.stripe.event("checkout.session.completed", session)
    senders = [fakes.stripe.sender(server.base_url, path) for path in ("/api/stripe/webhook", "/api/cardpay/webhook")]
    async with httpx.AsyncClient(timeout=60) as http:
        deliveries = [sender.send(event, client=http) for sender in senders for _ in range(15)]
        manual = [admin.call("POST", "/api/user/topup/complete", json={"trade_no": trade_no}) for _ in range(5)]
        results = await asyncio.gather(*deliveries, *manual)
        statuses = [r.status_code for r in results[:len(deliveries)]]
        assert set(statuses) == {200}, statuses
        assert all(r["success"] for r in results[len(deliveries):])  # type: ignore[index]
        assert set(await replay(lambda: senders[0].send(event, client=http))) == {200}
    assert await quota_of(admin, buyer.user_id) == 3 * UNIT
    assert await m.Log.filter(user_id=buyer.user_id, type=m.LOG_TOPUP).count() == 1
    assert (await m.TopUp.get(trade_no=trade_no)).status == "success"
    await buyer.close()
    await admin.close()


async def test_the_access_log_never_carries_a_callbacks_query(make_gateway: Any, fakes: Fakes,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """With ``access_log`` on, Hypercorn writes a line per request, before the callback is
    verified: Epay's GET notify carries its signature, money and order number in the query. On
    every payment callback path, whatever the line's format (Hypercorn's default names no query;
    ``%(R)s``, ``%(Uq)s`` and ``%(q)s`` do), the query is blanked, also with a trailing slash
    (every route answers with one too); another path's is left whole."""
    caplog.set_level(logging.INFO, logger="hypercorn.access")
    server, admin = await _deploy(make_gateway, fakes)  # installs the providers' routes
    params = fakes.epay.notification({"out_trade_no": "USR7NOleak0001", "type": "alipay", "name": "TUC3",
                                      "money": "21.90"})
    secrets = [params["sign"], params["trade_no"], "USR7NOleak0001", "21.90"]
    query = urlencode(params)

    async def line_of(fmt: str, path: str, query: str) -> str:
        config = Config()
        config.accesslog = logging.getLogger("hypercorn.access")
        config.access_log_format = fmt
        scope = {"type": "http", "http_version": "1.1", "method": "GET", "scheme": "http",
                 "client": ("203.0.113.7", 4000), "path": path, "query_string": query.encode(), "headers": []}
        caplog.clear()
        await HypercornLogger(config).access(scope, {"status": 200, "headers": []}, 0.002)  # type: ignore[arg-type]
        (record,) = [r for r in caplog.records if r.name == "hypercorn.access"]
        return record.getMessage()

    for fmt in (Config().access_log_format, '%(h)s "%(R)s" %(s)s', "%(m)s %(Uq)s q=%(q)s %(U)s"):
        for path in (*WEBHOOKS, *(p + "/" for p in WEBHOOKS)):
            line = await line_of(fmt, path, query)
            assert path in line and not any(secret in line for secret in secrets), (fmt, line)
        if "q" in fmt or "R" in fmt:  # the format shows queries: a callback's redacted, another path's whole
            assert "[REDACTED]" in await line_of(fmt, "/api/user/epay/notify", query)
            assert "p=2" in await line_of(fmt, "/api/log/self", "p=2")
    await admin.close()
