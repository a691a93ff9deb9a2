"""Creem as a payment provider: products configured by the admin (``CreemProducts``: each a
Creem product id, a price, a currency and the quota it brings), a checkout per order (Creem's
REST API over httpx, the order's reference as ``request_id``), and the ``checkout.completed``
webhook, signed with ``creem-signature`` (hex HMAC-SHA256 of the raw body)."""

from __future__ import annotations

import hashlib
import hmac
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any

import httpx
from pydantic import StringConstraints

from faregate.api import (
    Body,
    Checkout,
    OptionSpec,
    PaymentAsk,
    PaymentEvent,
    PaymentProvider,
    PaymentRefused,
    PaymentRoutes,
    Quote,
    Services,
    Setting,
    TopUpOrder,
    Webhook,
    WebhookRejected,
    from_minor_units,
    json_dumps_str,
    json_loads,
    minor_unit,
    option_parsers,
    unset_problem,
)

NAME = "creem"
SIGNATURE_HEADER = "creem-signature"
LIVE_API = "https://api.creem.io"
TEST_API = "https://test-api.creem.io"
#: the most quota one product may bring (the wallet's ceiling)
MAX_QUOTA = 2**53


@dataclass(frozen=True, slots=True)
class Product:
    product_id: str
    name: str
    price: Decimal
    currency: str
    quota: int

    def as_json(self) -> dict[str, Any]:
        return {"productId": self.product_id, "name": self.name, "price": float(self.price),
                "currency": self.currency, "quota": self.quota}


def products(text: str) -> tuple[Product, ...]:
    """new-api's ``CreemProducts``: ``[{"productId", "name", "price", "currency", "quota"}]``."""
    if not text.strip():
        return ()
    try:
        raw = json_loads(text)
    except ValueError:
        raise ValueError("expected a JSON array of products") from None
    if not isinstance(raw, list) or len(raw) > 100:
        raise ValueError("expected a JSON array of at most 100 products")
    found: list[Product] = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise ValueError(f"product {n}: expected an object")
        product_id, name, price = item.get("productId"), item.get("name", ""), item.get("price")
        currency, quota = item.get("currency", "USD"), item.get("quota")
        if not isinstance(product_id, str) or not 1 <= len(product_id) <= 128 or \
                any(p.product_id == product_id for p in found):
            raise ValueError(f"product {n}: productId must be 1 to 128 characters and unique")
        if not isinstance(name, str) or len(name) > 128:
            raise ValueError(f"product {n}: name must be at most 128 characters")
        if isinstance(price, bool) or not isinstance(price, int | float) or not math.isfinite(price) \
                or not 0 < price <= 1e7:
            raise ValueError(f"product {n}: price must be a number above 0")
        if not isinstance(currency, str) or len(currency) != 3 or not currency.isascii() or not currency.isalpha():
            raise ValueError(f"product {n}: currency must be a three-letter ISO 4217 code")
        if isinstance(quota, bool) or not isinstance(quota, int) or not 0 < quota <= MAX_QUOTA:
            raise ValueError(f"product {n}: quota must be a whole number above 0")
        currency = currency.upper()
        amount = Decimal(str(price))
        if amount != amount.quantize(minor_unit(currency)):
            raise ValueError(f"product {n}: price has more decimals than {currency} has")
        found.append(Product(product_id, name, amount, currency, quota))
    return tuple(found)


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("CreemApiKey", "", "Creem API key creating checkouts.", option_parsers.text(255), secret=True),
    OptionSpec("CreemWebhookSecret", "", "The signing secret of the Creem webhook {ServerAddress}/api/creem/webhook.",
               option_parsers.text(255), secret=True),
    OptionSpec("CreemProducts", "[]", 'The products sold: [{"productId", "name", "price", "currency", "quota"}] '
               "(price in major units, quota credited when paid).", products),
    OptionSpec("CreemTestMode", "false", "Use Creem's test API (test-api.creem.io).", option_parsers.boolean),
)

SETTINGS: tuple[Setting, ...] = (
    Setting("creem_api_base", "", "Where Creem's REST API is (a test double or a proxy); empty: Creem's, live or "
            "test by CreemTestMode."),
    Setting("creem_timeout", 30.0, "Seconds to wait for Creem's API.", float),
)


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
