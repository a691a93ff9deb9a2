"""Creem as a payment provider: products configured by the admin (``CreemProducts``: each a
Creem product id, a price, a currency and the quota it brings), a checkout per order (Creem's
REST API over httpx, the order's reference as ``request_id``), and the ``checkout.completed``
webhook, signed with ``creem-signature`` (hex HMAC-SHA256 of the raw body)."""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated, Any

import httpx
from pydantic import StringConstraints

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
    from_minor_units,
    json_dumps_str,
    json_loads,
    unset_problem,
)

NAME = "creem"
SIGNATURE_HEADER = "creem-signature"
LIVE_API = "https://api.creem.io"
TEST_API = "https://test-api.creem.io"


class CreemPay(Body):
    """``POST /api/user/creem/pay``: the product to buy."""

    product_id: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=128)]
    payment_method: Annotated[str, StringConstraints(max_length=32)] = NAME


def signature(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class CreemProvider(PaymentProvider):
    name = NAME
    routes = PaymentRoutes(pay=("/api/user/creem/pay", "/api/user/hostedpay/pay"),
                           webhook=("/api/creem/webhook", "/api/hostedpay/webhook"), pay_body=CreemPay)

    def __init__(self, services: Services) -> None:
        self.services = services

    def _option(self, key: str) -> Any:
        return self.services.options.value(key)

    def problem(self) -> str | None:
        return unset_problem("Creem", self._option, ("CreemApiKey", "CreemWebhookSecret"))

    def info(self) -> dict[str, Any]:
        enabled = self.problem() is None and bool(self._option("CreemProducts"))
        return {"enable_creem_topup": enabled,
                "creem_products": [p.as_json() for p in self._option("CreemProducts")] if enabled else []}

    def quote(self, ask: PaymentAsk) -> Quote:
        body = ask.body
        if not isinstance(body, CreemPay):
            raise PaymentRefused("invalid request")
        if body.payment_method not in ("", NAME):
            raise PaymentRefused("unsupported payment method")
        for product in self._option("CreemProducts"):
            if product.product_id == body.product_id:
                # new-api's rule: the order's amount is the product's quota, credited as it is
                return Quote(amount=product.quota, money=product.price, currency=product.currency,
                             quota=product.quota, payment_method=NAME, label=product.name)
        raise PaymentRefused("no such product")

    def _api_base(self) -> str:
        base = str(self.services.settings.get("creem_api_base")).rstrip("/")
        return base or (TEST_API if self._option("CreemTestMode") else LIVE_API)

    async def create_checkout(self, order: TopUpOrder, ask: PaymentAsk) -> Checkout:
        body = ask.body
        if not isinstance(body, CreemPay):
            raise PaymentRefused("invalid request")
        payload: dict[str, Any] = {"product_id": body.product_id, "request_id": order.trade_no,
                                   "metadata": {"reference_id": order.trade_no, "user_id": str(order.user_id),
                                                "quota": str(order.quota)}}
        if ask.payer.email:
            payload["customer"] = {"email": ask.payer.email}
        headers = {"x-api-key": str(self._option("CreemApiKey")), "Content-Type": "application/json"}
        async with httpx.AsyncClient(timeout=float(self.services.settings.get("creem_timeout"))) as http:
            resp = await http.post(self._api_base() + "/v1/checkouts", content=json_dumps_str(payload),
                                   headers=headers)
        if resp.status_code // 100 != 2:
            raise PaymentRefused(f"Creem refused the checkout (HTTP {resp.status_code})")
        answer = resp.json()
        link = answer.get("checkout_url") if isinstance(answer, dict) else None
        if not isinstance(link, str) or not link.startswith("https://"):
            raise PaymentRefused("Creem answered without a checkout link")
        return Checkout({"checkout_url": link, "order_id": order.trade_no})

    async def verify_webhook(self, webhook: Webhook) -> PaymentEvent:
        secret = str(self._option("CreemWebhookSecret"))
        given = webhook.headers.get(SIGNATURE_HEADER, "").strip()
        if not secret:
            raise WebhookRejected("no webhook secret is set")
        if not given or len(given) > 256:
            raise WebhookRejected("missing creem-signature header", status=401)
        if not hmac.compare_digest(signature(secret, webhook.body).encode(), given.lower().encode()):
            raise WebhookRejected("bad signature", status=401)
        try:
            event = json_loads(webhook.body)
        except ValueError:
            raise WebhookRejected("the signed body is not JSON") from None
        if not isinstance(event, dict):
            raise WebhookRejected("the signed body is not an event")
        event_id = str(event.get("id") or "")
        checkout = event.get("object")
        if event.get("eventType") != "checkout.completed" or not isinstance(checkout, dict):
            return PaymentEvent("ignored", event_id=event_id)
        trade_no, order = checkout.get("request_id"), checkout.get("order")
        if not isinstance(trade_no, str) or not trade_no or not isinstance(order, dict):
            return PaymentEvent("ignored", event_id=event_id)
        if order.get("status") != "paid" or order.get("type", "onetime") != "onetime":
            return PaymentEvent("ignored", trade_no=trade_no, event_id=event_id)
        paid = order.get("amount_paid", order.get("amount"))
        currency = order.get("currency")
        if isinstance(paid, bool) or not isinstance(paid, int) or paid < 0 or not isinstance(currency, str):
            raise WebhookRejected("the order has no amount or currency")
        reference = order.get("id")
        return PaymentEvent("paid", trade_no=trade_no, money=from_minor_units(paid, currency),
                            currency=currency.upper(), event_id=event_id,
                            reference=reference if isinstance(reference, str) else "")
