"""Epay (易支付, the "easy payment" protocol of many Chinese payment aggregators) as a payment
provider: the gateway hands the browser a signed form to post to ``{PayAddress}/submit.php``; the
aggregator calls back ``/api/user/epay/notify`` (GET query or POST form) with the payment's
parameters, MD5-signed with the merchant key, and expects the plain text ``success``.

The signature is the protocol's: the MD5 hex digest of the parameters sorted by name (without
``sign``, ``sign_type`` and empty values) as ``a=1&b=2``, with the key appended. MD5 is fixed by
the protocol; the rest is checked too: the merchant id (``pid``), that only ``TRADE_SUCCESS``
pays, and (in the core) that ``money`` is the order's."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
import time
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import parse_qsl

from pydantic import Field, StringConstraints

from faregate.api import (
    Body,
    Checkout,
    PaymentAsk,
    PaymentEvent,
    PaymentProvider,
    PaymentRefused,
    PaymentRoutes,
    Quote,
    Services,
    TopUpOrder,
    Webhook,
    WebhookRejected,
    parse_money,
    quote_top_up,
    unset_problem,
)

NAME = "epay"
CURRENCY = "CNY"
PAID = "TRADE_SUCCESS"
NOTIFY_PATH = "/api/user/epay/notify"
#: a callback with more parameters than this is no Epay notification
MAX_PARAMS = 64
_ALNUM = string.ascii_letters + string.digits


def sign(params: Mapping[str, str], key: str) -> str:
    """The protocol's MD5 signature of ``params`` with the merchant ``key``."""
    text = "&".join(f"{name}={value}" for name, value in sorted(params.items())
                    if name not in ("sign", "sign_type") and value != "")
    return hashlib.md5((text + key).encode()).hexdigest()


class EpayPay(Body):
    """``POST /api/user/pay``: units to buy and the Epay method (a ``type`` of ``PayMethods``)."""

    amount: Annotated[int, Field(ge=1, le=10**9)]
    payment_method: Annotated[str, StringConstraints(min_length=1, max_length=32)]


class EpayAmount(Body):
    """``POST /api/user/amount``: what ``amount`` units cost."""

    amount: Annotated[int, Field(ge=1, le=10**9)]
    payment_method: Annotated[str, StringConstraints(max_length=32)] | None = None


class EpayProvider(PaymentProvider):
    name = NAME
    routes = PaymentRoutes(pay=("/api/user/pay",), amount=("/api/user/amount",), webhook=(NOTIFY_PATH,),
                           pay_body=EpayPay, amount_body=EpayAmount, webhook_methods=("GET", "POST"),
                           webhook_text=True)

    def __init__(self, services: Services) -> None:
        self.services = services

    def _option(self, key: str) -> Any:
        return self.services.options.value(key)

    def problem(self) -> str | None:
        return unset_problem("Epay", self._option, ("PayAddress", "EpayId", "EpayKey"))

    def _callback_base(self) -> str:
        return str(self._option("CustomCallbackAddress") or self._option("ServerAddress")).strip().rstrip("/")

    def info(self) -> dict[str, Any]:
        return {"enable_online_topup": self.problem() is None}

    def pay_methods(self) -> list[dict[str, str]]:
        return list(self._option("PayMethods")) if self.problem() is None else []

    def new_trade_no(self, user_id: int) -> str:
        """new-api's form: ``USR<user>NO<6 random><unix time>``."""
        return f"USR{user_id}NO{''.join(secrets.choice(_ALNUM) for _ in range(6))}{int(time.time())}"

    def quote(self, ask: PaymentAsk) -> Quote:
        body = ask.body
        if not isinstance(body, EpayPay | EpayAmount):
            raise PaymentRefused("invalid request")
        minimum = int(self._option("MinTopUp"))
        method = body.payment_method or ""
        if method:
            found = next((m for m in self._option("PayMethods") if m["type"] == method), None)
            if found is None:
                raise PaymentRefused("no such payment method")
            if found.get("min_topup"):
                minimum = int(found["min_topup"])
        return quote_top_up(self.services.options, amount=body.amount, group=ask.payer.group,
                            unit_price=self._option("Price"), currency=CURRENCY, payment_method=method,
                            min_topup=minimum)

    async def create_checkout(self, order: TopUpOrder, ask: PaymentAsk) -> Checkout:
        if not self._callback_base():
            raise PaymentRefused("ServerAddress (or CustomCallbackAddress) is empty: the Epay gateway could not "
                                 "call back")
        site = str(self._option("ServerAddress")).strip().rstrip("/") or self._callback_base()
        params = {"pid": str(self._option("EpayId")), "type": order.payment_method, "out_trade_no": order.trade_no,
                  "notify_url": self._callback_base() + NOTIFY_PATH, "return_url": site + "/console/log",
                  "name": f"TUC{order.amount}", "money": f"{order.money:.2f}", "device": "pc"}
        params["sign"] = sign(params, str(self._option("EpayKey")))
        params["sign_type"] = "MD5"
        return Checkout(params, {"url": str(self._option("PayAddress")).rstrip("/") + "/submit.php"})

    async def verify_webhook(self, webhook: Webhook) -> PaymentEvent:
        if webhook.method == "POST":
            try:
                pairs = parse_qsl(webhook.body.decode(), keep_blank_values=True, max_num_fields=MAX_PARAMS,
                                  strict_parsing=False)
            except (UnicodeDecodeError, ValueError):
                raise WebhookRejected("the callback is not a form") from None
            params = dict(pairs)
        else:
            if len(webhook.query) > MAX_PARAMS:
                raise WebhookRejected("too many parameters")
            params = dict(webhook.query)
        given = params.get("sign", "")
        key = str(self._option("EpayKey"))
        if not key:
            raise WebhookRejected("no merchant key is set")
        if not given or not hmac.compare_digest(sign(params, key).encode(), given.lower().encode()):
            raise WebhookRejected("bad signature")
        if params.get("pid", "") != str(self._option("EpayId")):
            raise WebhookRejected("the callback is for another merchant id")
        trade_no = params.get("out_trade_no", "")
        if params.get("trade_status") != PAID or not trade_no:
            return PaymentEvent("ignored", trade_no=trade_no, event_id=params.get("trade_no", ""))
        money = parse_money(params.get("money", ""))
        if money is None:
            raise WebhookRejected("the callback has no money")
        return PaymentEvent("paid", trade_no=trade_no, money=money, currency=CURRENCY,
                            event_id=params.get("trade_no", ""), reference=params.get("trade_no", ""),
                            payment_method=params.get("type", "")[:32])
