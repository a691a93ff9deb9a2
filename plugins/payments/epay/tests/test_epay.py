"""Epay top-ups end to end: a real gateway, a fake Epay aggregator that checks the signed form as
the real one does and calls the gateway back (GET query or POST form, MD5-signed). Paid once,
whatever is replayed; forged, foreign, cross-provider and mismatched callbacks credit nothing."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from typing import Any

import pytest
import pytest_asyncio

from faregate.api import Quote, create_top_up
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.payments import declare_oversized, order, quota_of, replay, top_up_logs, user_session
from faregate_payment_epay.provider import sign
from faregate_payment_epay.testing import FakeEpay

UNIT = 500_000


@pytest_asyncio.fixture
async def epay() -> AsyncIterator[FakeEpay]:
    async with FakeEpay() as fake:
        yield fake


@pytest_asyncio.fixture
async def server(make_gateway: Callable[..., Awaitable[GatewayServer]]) -> GatewayServer:
    return await make_gateway()


@pytest_asyncio.fixture
async def root(server: GatewayServer, epay: FakeEpay) -> AsyncIterator[AdminClient]:
    client = AdminClient(server.base_url)
    await client.setup_root()
    # the aggregator calls the gateway back at its own address
    for key, value in {"ServerAddress": server.base_url, "PayAddress": epay.base_url, "EpayId": epay.pid,
                       "EpayKey": epay.key}.items():
        await client.set_option(key, value)
    yield client
    await client.close()


@pytest_asyncio.fixture
async def buyer(server: GatewayServer, root: AdminClient) -> AsyncIterator[AdminClient]:
    client = await user_session(server, root, "buyer")
    yield client
    await client.close()


async def pay(buyer: AdminClient, epay: FakeEpay, amount: int = 10, method: str = "alipay") -> dict[str, str]:
    """Start a payment and post its form to the aggregator, as the top-up page does."""
    answer = await buyer.call("POST", "/api/user/pay", json={"amount": amount, "payment_method": method})
    assert answer["message"] == "success", answer
    assert answer["url"] == epay.base_url + "/submit.php"
    accepted = await epay.submit(answer["url"], answer["data"])
    assert accepted.status_code == 200, accepted.text
    return epay.orders[-1]


def test_signature_is_the_protocols() -> None:
    params = {"pid": "1", "money": "1.00", "name": "", "sign": "x", "sign_type": "MD5", "a": "b"}
    assert sign(params, "KEY") == hashlib.md5(b"a=b&money=1.00&pid=1KEY").hexdigest()


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_pay_then_notify_credits_once(method: str, server: GatewayServer, root: AdminClient, buyer: AdminClient,
                                            epay: FakeEpay) -> None:
    form = await pay(buyer, epay, 10)
    trade_no = form["out_trade_no"]
    assert trade_no.startswith(f"USR{buyer.user_id}NO")
    assert (form["money"], form["type"], form["name"]) == ("73.00", "alipay", "TUC10")
    assert form["notify_url"] == server.base_url + "/api/user/epay/notify"
    pending = await order(root, trade_no)
    assert (pending["money"], pending["currency"], pending["quota"], pending["payment_provider"]) == (
        73.0, "CNY", 10 * UNIT, "epay")
    before = await quota_of(root, buyer.user_id)
    params = epay.notification(form, type="wxpay")  # paid with another of the gateway's methods

    async def notify() -> Any:
        return await epay.notify(form, method=method, params=params)

    first = await notify()
    assert (first.status_code, first.text) == (200, "success")
    assert await quota_of(root, buyer.user_id) == before + 10 * UNIT
    done = await order(root, trade_no)
    assert done["status"] == "success" and done["payment_method"] == "wxpay"
    # the aggregator retries until it reads "success": every retry reads it, nothing more is credited
    assert set(await replay(notify)) == {200}
    assert {(await notify()).text for _ in range(3)} == {"success"}
    assert await quota_of(root, buyer.user_id) == before + 10 * UNIT
    assert len(await top_up_logs(root, buyer.user_id)) == 1


async def test_quotes_methods_and_top_up_info(root: AdminClient, buyer: AdminClient, epay: FakeEpay) -> None:
    assert await buyer.call("POST", "/api/user/amount", json={"amount": 10}) == {"message": "success",
                                                                                 "data": "73.00"}
    await root.set_option("payment_setting.amount_discount", [{"min_amount": 10, "discount": 0.5}])
    assert (await buyer.call("POST", "/api/user/amount", json={"amount": 20}))["data"] == "73.00"
    await root.set_option("PayMethods", [{"name": "Alipay", "type": "alipay", "min_topup": "50"}])
    low = await buyer.call("POST", "/api/user/pay", json={"amount": 20, "payment_method": "alipay"})
    assert low["message"] == "error" and "at least 50" in low["data"]
    unknown = await buyer.call("POST", "/api/user/pay", json={"amount": 60, "payment_method": "wxpay"})
    assert unknown == {"message": "error", "data": "no such payment method"}
    info = await buyer.ok("GET", "/api/user/topup/info")
    assert info["enable_online_topup"] is True and info["min_topup"] == 1
    assert info["pay_methods"] == [{"name": "Alipay", "type": "alipay", "min_topup": "50"}]
    listed = {item["key"] for item in await root.ok("GET", "/api/option/")}
    assert {"PayAddress", "EpayId", "PayMethods", "Price"} <= listed and "EpayKey" not in listed


async def test_forged_foreign_and_mismatched_callbacks(server: GatewayServer, root: AdminClient, buyer: AdminClient,
                                                       epay: FakeEpay) -> None:
    form = await pay(buyer, epay, 5)
    before = await quota_of(root, buyer.user_id)
    forged = epay.notification(form, key="guessed-key")
    unsigned = {k: v for k, v in epay.notification(form).items() if k != "sign"}
    tampered = epay.notification(form) | {"money": "0.01"}
    foreign = epay.notification(form, pid="9999")  # another merchant's valid-looking callback
    cheap = epay.notification(form, money="0.01")  # signed, but not the order's price
    for params in (forged, unsigned, tampered, foreign, cheap):
        for method in ("GET", "POST"):
            resp = await epay.notify(form, method=method, params=params)
            assert (resp.status_code, resp.text) == (200, "fail"), params
    # a payment that failed or is still waiting: acknowledged, nothing credited
    waiting = await epay.notify(form, params=epay.notification(form, trade_status="WAIT_BUYER_PAY"))
    assert waiting.text == "success"
    # a Stripe order named by a valid Epay callback: not Epay's, not completed
    assert buyer.user_id is not None
    other = await create_top_up(buyer.user_id, "stripe", Quote(amount=5, money=Decimal("36.50"), currency="CNY",
                                                               quota=5 * UNIT, payment_method="stripe"), "ref_cross_1")
    cross = await epay.notify(form, params=epay.notification(form, out_trade_no=other.trade_no))
    assert cross.text == "fail"
    assert (await order(root, other.trade_no))["status"] == "pending"
    assert (await order(root, form["out_trade_no"]))["status"] == "pending"
    assert await quota_of(root, buyer.user_id) == before


async def test_empty_key_refuses_to_enable(server: GatewayServer, root: AdminClient, buyer: AdminClient,
                                           epay: FakeEpay) -> None:
    form = await pay(buyer, epay, 3)
    await root.set_option("EpayKey", "")
    assert (await buyer.ok("GET", "/api/user/topup/info"))["enable_online_topup"] is False
    refused = await buyer.call("POST", "/api/user/pay", json={"amount": 3, "payment_method": "alipay"})
    assert refused == {"message": "error", "data": "Epay is not set up: EpayKey is empty"}
    resp = await epay.notify(form, params=epay.notification(form, key=""))
    assert resp.text == "fail"
    assert (await order(root, form["out_trade_no"]))["status"] == "pending"


async def test_notify_body_is_capped_before_reading(server: GatewayServer, root: AdminClient) -> None:
    status, _ = await declare_oversized(server.base_url + "/api/user/epay/notify", 64 * 1024 + 1)
    assert status == 413


async def test_a_user_starts_at_most_twenty_payments_in_twenty_minutes(buyer: AdminClient) -> None:
    """new-api's critical rate limit on the pay routes: each start makes an order row (and, for
    most gateways, a call to the gateway), so one user may not make thousands."""
    for _ in range(20):
        answer = await buyer.call("POST", "/api/user/pay", json={"amount": 10, "payment_method": "alipay"})
        assert answer["message"] == "success", answer
    refused = await buyer.http.post("/api/user/pay", json={"amount": 10, "payment_method": "alipay"},
                                    headers={"New-Api-User": str(buyer.user_id)})
    assert refused.status_code == 429 and refused.json()["message"] == "error"
    assert "too many payments" in refused.json()["data"]
    assert (await buyer.ok("GET", "/api/user/topup/self"))["total"] == 20
