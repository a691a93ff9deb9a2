"""Top-up orders (issue 17): the price rule, completing an order exactly once (bound to its
provider, money and currency checked, the wallet ceiling kept, rolled back whole when refused),
the admin's manual completion, the order lists and the top-up info."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import httpx
import pytest

from faregate.billing.pricing import MAX_QUOTA
from faregate.contracts.payments import PaymentRefused, Quote
from faregate.db import models as m
from faregate.default_plugins.options import core_options
from faregate.payments.money import (
    amount_discount,
    amount_options,
    from_minor_units,
    quote_top_up,
    to_minor_units,
)
from faregate.payments.orders import Completion, complete_top_up, create_top_up, expire_top_up, fail_top_up
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.payments import user_session

UNIT = 500_000


def _quote(money: str = "10.00", currency: str = "USD", quota: int = 10 * UNIT) -> Quote:
    return Quote(amount=10, money=Decimal(money), currency=currency, quota=quota, payment_method="card")


async def _user(name: str = "payer", quota: int = 0) -> m.User:
    return await m.User.create(username=name, quota=quota)


# ---- prices -------------------------------------------------------------------------------
def test_price_rule() -> None:
    options = core_options({"TopupGroupRatio": '{"vip": 0.5}', "payment_setting.amount_discount": '{"100": 0.9}'})
    quote = quote_top_up(options, amount=100, group="vip", unit_price=7.3, currency="cny", payment_method="alipay",
                         min_topup=1)
    assert quote == Quote(amount=100, money=Decimal("328.50"), currency="CNY", quota=100 * UNIT,
                          payment_method="alipay")
    # a price object decides: neither the group ratio nor the discount
    assert quote_top_up(options, amount=100, group="vip", unit_price=1, currency="USD", payment_method="x",
                        min_topup=1, discounts=False).money == Decimal("100.00")
    with pytest.raises(PaymentRefused, match="at least 5"):
        quote_top_up(options, amount=4, group="default", unit_price=1, currency="USD", payment_method="x",
                     min_topup=5)
    with pytest.raises(PaymentRefused, match="too small"):
        quote_top_up(options, amount=1, group="default", unit_price=0.001, currency="USD", payment_method="x",
                     min_topup=1)
    # TOKENS display: the amount is quota; the minimum too
    tokens = core_options({"general_setting.quota_display_type": "TOKENS"})
    quote = quote_top_up(tokens, amount=750_000, group="default", unit_price=2, currency="USD", payment_method="x",
                         min_topup=1)
    assert (quote.amount, quote.quota, quote.money) == (1, 750_000, Decimal("3.00"))
    with pytest.raises(PaymentRefused, match=f"at least {UNIT}"):
        quote_top_up(tokens, amount=10, group="default", unit_price=2, currency="USD", payment_method="x",
                     min_topup=1)
    # a zero-decimal currency rounds to whole units
    assert quote_top_up(options, amount=3, group="default", unit_price=150.4, currency="JPY", payment_method="x",
                        min_topup=1).money == Decimal("451")


def test_minor_units_and_option_parsers() -> None:
    assert to_minor_units(Decimal("12.345"), "usd") == 1235 and from_minor_units(1235, "USD") == Decimal("12.35")
    assert to_minor_units(Decimal("500"), "JPY") == 500 and from_minor_units(500, "jpy") == Decimal("500")
    thresholds = amount_discount('[{"min_amount": 10, "discount": 0.9}, {"min_amount": 100, "discount": 0.8}]')
    assert [thresholds.for_amount(a) for a in (5, 10, 99, 100)] == [Decimal(1), Decimal("0.9"), Decimal("0.9"),
                                                                   Decimal("0.8")]
    for bad in ('{"x": 1}', '{"10": 0}', '{"10": true}', '[{"min_amount": -1, "discount": 1}]', "[1]", '"s"'):
        with pytest.raises(ValueError):
            amount_discount(bad)
    assert amount_options("[10, 20]") == [10, 20]
    for bad in ("[0]", '["10"]', "[true]", "{}"):
        with pytest.raises(ValueError):
            amount_options(bad)


# ---- completing an order ------------------------------------------------------------------------
async def test_complete_credits_once_and_checks_the_order(gateway: GatewayServer) -> None:
    user = await _user()
    order = await create_top_up(user.id, "stripe", _quote(), "ref_a")
    assert (order.status, order.provider, order.currency, order.quota) == ("pending", "stripe", "USD", 10 * UNIT)
    refused = [
        await complete_top_up("ref_nope", provider="stripe", money=Decimal("10"), currency="USD"),
        await complete_top_up("ref_a", provider="epay", money=Decimal("10"), currency="USD"),
        await complete_top_up("ref_a", provider="stripe", money=None, currency="USD"),
        await complete_top_up("ref_a", provider="stripe", money=Decimal("9.99"), currency="USD"),
        await complete_top_up("ref_a", provider="stripe", money=Decimal("10"), currency="EUR"),
    ]
    assert [(o.status, o.reason) for o in refused] == [
        (Completion.REJECTED, "unknown order"), (Completion.REJECTED, "wrong provider"),
        (Completion.REJECTED, "money missing"), (Completion.REJECTED, "amount mismatch"),
        (Completion.REJECTED, "currency mismatch")]
    assert (await m.User.get(id=user.id)).quota == 0
    done = await complete_top_up("ref_a", provider="stripe", money=Decimal("10.0"), currency="usd",
                                 event_id="evt_1", payment_method="card_visa", client_ip="203.0.113.9")
    assert done.credited and done.quota == 10 * UNIT and done.user_id == user.id
    again = await complete_top_up("ref_a", provider="stripe", money=Decimal("10"), currency="USD")
    assert again.status is Completion.ALREADY_DONE and again.quota == 0
    assert (await complete_top_up("ref_a", provider=None)).status is Completion.ALREADY_DONE
    assert (await m.User.get(id=user.id)).quota == 10 * UNIT
    row = await m.TopUp.get(trade_no="ref_a")
    assert (row.status, row.payment_method) == ("success", "card_visa") and row.complete_time > 0
    (log,) = await m.Log.filter(user_id=user.id)
    assert (log.type, log.quota, log.ip, log.username) == (m.LOG_TOPUP, 10 * UNIT, "203.0.113.9", "payer")
    assert "ref_a" in log.content and '"event_id":"evt_1"' in log.other.replace(" ", "")


async def test_expired_failed_and_refused_orders_stay_uncredited(gateway: GatewayServer) -> None:
    user = await _user(quota=MAX_QUOTA - 5)
    await create_top_up(user.id, "stripe", _quote(), "ref_full")
    # the wallet ceiling: refused, and the order is still pending (rolled back whole)
    full = await complete_top_up("ref_full", provider="stripe", money=Decimal("10"), currency="USD")
    assert (full.status, full.reason) == (Completion.REJECTED, "wallet full")
    assert (await m.TopUp.get(trade_no="ref_full")).status == "pending"
    assert not await m.Log.filter(user_id=user.id).exists()
    await m.User.filter(id=user.id).update(quota=0)
    assert not await expire_top_up("ref_full", "epay")  # another provider's event expires nothing
    assert await expire_top_up("ref_full", "stripe")
    late = await complete_top_up("ref_full", provider="stripe", money=Decimal("10"), currency="USD")
    assert (late.status, late.reason) == (Completion.REJECTED, "not pending")
    assert (await m.TopUp.get(trade_no="ref_full")).status == "expired"
    # an order whose user is gone
    await create_top_up(99_999, "stripe", _quote(), "ref_ghost")
    assert (await complete_top_up("ref_ghost", provider=None)).reason == "no user"
    assert (await m.TopUp.get(trade_no="ref_ghost")).status == "pending"


async def test_an_imported_order_is_priced_by_new_apis_rule(gateway: GatewayServer) -> None:
    user = await _user()
    await m.TopUp.create(user_id=user.id, amount=3, money=Decimal("21.9"), trade_no="USR1NOold",
                         payment_method="alipay", payment_provider="epay", status="pending")
    await m.TopUp.create(user_id=user.id, amount=1000, money=Decimal("1"), trade_no="ref_creem_old",
                         payment_provider="creem", status="pending")
    # no currency stored: a provider's event cannot prove it paid in the right one; an admin can
    assert (await complete_top_up("USR1NOold", provider="epay", money=Decimal("21.9"), currency="CNY")).reason \
        == "currency mismatch"
    assert (await complete_top_up("USR1NOold", provider=None, quota_per_unit=1000)).quota == 3000
    assert (await complete_top_up("ref_creem_old", provider=None)).quota == 1000


async def test_racing_completions_credit_once(gateway: GatewayServer) -> None:
    user = await _user()
    await create_top_up(user.id, "stripe", _quote(), "ref_race")
    calls = [complete_top_up("ref_race", provider="stripe", money=Decimal("10"), currency="USD") for _ in range(15)]
    calls += [complete_top_up("ref_race", provider=None) for _ in range(5)]
    outcomes = await asyncio.gather(*calls)
    assert sorted(o.status for o in outcomes).count(Completion.CREDITED) == 1
    assert {o.status for o in outcomes} == {Completion.CREDITED, Completion.ALREADY_DONE}
    assert (await m.User.get(id=user.id)).quota == 10 * UNIT
    assert await m.Log.filter(user_id=user.id).count() == 1


async def test_an_admin_rescues_an_expired_or_failed_order_once(gateway: GatewayServer) -> None:
    """The money arrived after the checkout expired (or after it was marked failed): a gateway's
    late event is refused, an admin completes the order by hand, once; the gateway's retries and
    a second admin then credit nothing, racing or not."""
    user = await _user()
    for trade_no in ("ref_late", "ref_failed", "ref_raced"):
        await create_top_up(user.id, "stripe", _quote(), trade_no)
    assert await expire_top_up("ref_late", "stripe") and await expire_top_up("ref_raced", "stripe")
    assert await fail_top_up("ref_failed", "stripe")
    paid = {"provider": "stripe", "money": Decimal("10"), "currency": "USD"}
    assert (await complete_top_up("ref_late", **paid)).reason == "not pending"
    rescued = await complete_top_up("ref_late", provider=None)
    assert (rescued.status, rescued.quota, rescued.was) == (Completion.CREDITED, 10 * UNIT, "expired")
    assert (await complete_top_up("ref_late", **paid)).status is Completion.ALREADY_DONE
    assert (await complete_top_up("ref_late", provider=None)).status is Completion.ALREADY_DONE
    assert (await complete_top_up("ref_failed", provider=None)).was == "failed"
    outcomes = await asyncio.gather(*([complete_top_up("ref_raced", provider=None) for _ in range(5)]
                                      + [complete_top_up("ref_raced", **paid) for _ in range(5)]))
    assert [o.status for o in outcomes].count(Completion.CREDITED) == 1
    assert (await m.User.get(id=user.id)).quota == 30 * UNIT
    rows = {row.trade_no: row for row in await m.TopUp.filter(user_id=user.id)}
    assert {(row.status, row.complete_time > 0) for row in rows.values()} == {("success", True)}
    logs = await m.Log.filter(user_id=user.id).order_by("id")
    assert len(logs) == 3 and all(log.quota == 10 * UNIT for log in logs)
    assert "rescued from expired" in logs[0].content and '"rescued_from":"failed"' in logs[1].other.replace(" ", "")


# ---- routes ----------------------------------------------------------------------------------
async def test_admin_completion_and_lists(gateway: GatewayServer, admin: AdminClient) -> None:
    ann = await user_session(gateway, admin, "ann")
    bob = await user_session(gateway, admin, "bob")
    assert ann.user_id is not None and bob.user_id is not None
    await create_top_up(ann.user_id, "epay", _quote("73.00", "CNY"), "USR2NOaaaaaa1")
    await create_top_up(bob.user_id, "stripe", _quote(), "ref_bob_1")
    # a user sees only their own orders, found by number
    mine = await ann.ok("GET", "/api/user/topup/self")
    assert [o["trade_no"] for o in mine["items"]] == ["USR2NOaaaaaa1"] and mine["total"] == 1
    assert (await ann.ok("GET", "/api/user/topup/self", params={"keyword": "ref_bob"}))["total"] == 0
    everything = await admin.ok("GET", "/api/user/topup", params={"p": 1, "page_size": 1})
    assert (everything["total"], everything["page_size"], len(everything["items"])) == (2, 1, 1)
    assert (await admin.ok("GET", "/api/user/topup", params={"keyword": "%"}))["total"] == 0  # wildcards literal
    # only admins complete by hand; it credits once
    assert (await ann.call("POST", "/api/user/topup/complete", json={"trade_no": "USR2NOaaaaaa1"}))["success"] is False
    assert await admin.ok("POST", "/api/user/topup/complete", json={"trade_no": "USR2NOaaaaaa1"}) is None
    assert await admin.ok("POST", "/api/user/topup/complete", json={"trade_no": "USR2NOaaaaaa1"}) is None
    assert (await admin.ok("GET", f"/api/user/{ann.user_id}"))["quota"] == 10 * UNIT
    # bob's checkout expired, then his money arrived: the admin rescues it through the route
    assert await expire_top_up("ref_bob_1", "stripe")
    assert await admin.ok("POST", "/api/user/topup/complete", json={"trade_no": "ref_bob_1"}) is None
    assert (await admin.ok("GET", f"/api/user/{bob.user_id}"))["quota"] == 10 * UNIT
    missing = await admin.call("POST", "/api/user/topup/complete", json={"trade_no": "nope"})
    assert missing == {"success": False, "message": "the order does not exist"}
    assert (await admin.http.post("/api/user/topup/complete", json={},
                                  headers={"New-Api-User": str(admin.user_id)})).status_code == 400
    logs = await admin.ok("GET", "/api/log/", params={"type": 1})
    assert [row["content"].startswith("top-up by an admin") for row in logs["items"]] == [True, True]
    assert "rescued from expired" in logs["items"][0]["content"]
    await ann.close()
    await bob.close()


async def test_top_up_info_without_gateways(make_gateway: Any) -> None:
    from faregate.plugins import load_plugins

    server = await make_gateway(plugins=load_plugins(allow=[]))
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    info = await admin.ok("GET", "/api/user/topup/info")
    assert info == {"enable_online_topup": False, "enable_stripe_topup": False, "enable_creem_topup": False,
                    "creem_products": [], "pay_methods": [], "min_topup": 1,
                    "amount_options": [10, 20, 50, 100, 200, 500], "discount": {}}
    # the gateways' own routes are absent
    assert (await admin.http.post("/api/user/stripe/pay", json={"amount": 1})).status_code == 404
    await admin.close()


async def test_the_wallet_prices_an_amount_without_a_gateway(make_gateway: Any) -> None:
    """``POST /api/user/amount`` (issue 28, item 5): new-api's wallet asks it on load, and new-api
    prices it from the options (``Price`` yuan a unit × the group's ``TopupGroupRatio`` × the
    amount's discount) whatever gateway is set up. Without any payment plugin the core answers it."""
    from faregate.plugins import load_plugins

    server = await make_gateway(plugins=load_plugins(allow=[]))
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    assert await admin.call("POST", "/api/user/amount", json={"amount": 10}) == {"message": "success",
                                                                                 "data": "73.00"}
    await admin.set_option("Price", "2")
    await admin.set_option("TopupGroupRatio", {"default": 1.5})
    await admin.set_option("payment_setting.amount_discount", {"20": 0.5})
    await admin.set_option("MinTopUp", "5")
    assert (await admin.call("POST", "/api/user/amount", json={"amount": 20}))["data"] == "30.00"
    low = await admin.call("POST", "/api/user/amount", json={"amount": 4})
    assert low["message"] == "error" and "at least 5" in low["data"]
    for bad in ({"amount": "10"}, {"amount": 10.5}, {"amount": 0}, {"amount": 10**10}, {}):
        resp = await admin.http.post("/api/user/amount", json=bad, headers={"New-Api-User": str(admin.user_id)})
        assert resp.status_code == 400 and "amount" in resp.json()["message"], (bad, resp.text)
    async with httpx.AsyncClient(base_url=server.base_url) as anonymous:
        assert (await anonymous.post("/api/user/amount", json={"amount": 10})).json()["success"] is False
    await admin.close()


async def test_the_wallet_prices_an_amount_with_epay_not_set_up(make_gateway: Any) -> None:
    """With the Epay plugin installed but not set up (no PayAddress, EpayId, EpayKey) the quote
    is still given, as new-api gives it; paying is what is refused."""
    from faregate.plugins import load_plugins

    server = await make_gateway(plugins=load_plugins(allow=["faregate-payment-epay"]))
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    assert await admin.call("POST", "/api/user/amount", json={"amount": 10}) == {"message": "success",
                                                                                 "data": "73.00"}
    refused = await admin.call("POST", "/api/user/pay", json={"amount": 10, "payment_method": "alipay"})
    assert refused["message"] == "error" and "Epay is not set up" in refused["data"]
    await admin.close()
