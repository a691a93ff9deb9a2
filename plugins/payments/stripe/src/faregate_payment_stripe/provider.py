"""Stripe Checkout as a payment provider: a Checkout Session per order (Stripe's REST API over
httpx), the order's reference as the session's ``client_reference_id``, and the
``checkout.session.*`` webhook events, signed (``Stripe-Signature``) and checked against the
order by the core."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlsplit

import httpx
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
    from_minor_units,
    json_loads,
    quote_top_up,
    to_minor_units,
    unset_problem,
)
from faregate_payment_stripe import signature
from faregate_payment_stripe.options import MAX_AMOUNT

NAME = "stripe"
PAID_EVENTS = ("checkout.session.completed", "checkout.session.async_payment_succeeded")
ENDED_EVENTS = ("checkout.session.expired", "checkout.session.async_payment_failed")
Url = Annotated[str, StringConstraints(max_length=2048)]


class StripePay(Body):
    """``POST /api/user/stripe/pay``: units to buy; where Stripe sends the user back (on this
    site only; default ``{ServerAddress}/console/log`` and ``/console/topup``)."""

    amount: Annotated[int, Field(ge=1, le=MAX_AMOUNT)]
    payment_method: Annotated[str, StringConstraints(max_length=32)] = NAME
    success_url: Url | None = None
    cancel_url: Url | None = None


class StripeAmount(Body):
    """``POST /api/user/stripe/amount``: what ``amount`` units cost."""

    amount: Annotated[int, Field(ge=1, le=MAX_AMOUNT)]
    payment_method: Annotated[str, StringConstraints(max_length=32)] = NAME


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class StripeProvider(PaymentProvider):
    name = NAME
    routes = PaymentRoutes(
        pay=("/api/user/stripe/pay", "/api/user/cardpay/pay"),
        amount=("/api/user/stripe/amount", "/api/user/cardpay/amount"),
        webhook=("/api/stripe/webhook", "/api/cardpay/webhook"),
        pay_body=StripePay,
        amount_body=StripeAmount,
    )

    def __init__(self, services: Services) -> None:
        self.services = services

    def _option(self, key: str) -> Any:
        return self.services.options.value(key)

    def problem(self) -> str | None:
        return unset_problem("Stripe", self._option, ("StripeApiSecret", "StripeWebhookSecret"))

    def info(self) -> dict[str, Any]:
        return {"enable_stripe_topup": self.problem() is None, "stripe_min_topup": self._option("StripeMinTopUp")}

    def pay_methods(self) -> list[dict[str, str]]:
        if self.problem() is not None:
            return []
        return [{"name": "Stripe", "type": NAME, "color": "#635BFF", "min_topup": str(self._option("StripeMinTopUp"))}]

    def quote(self, ask: PaymentAsk) -> Quote:
        body = ask.body
        if not isinstance(body, StripePay | StripeAmount):
            raise PaymentRefused("invalid request")
        if body.payment_method not in ("", NAME):
            raise PaymentRefused("unsupported payment method")
        return quote_top_up(self.services.options, amount=body.amount, group=ask.payer.group,
                            unit_price=self._option("StripeUnitPrice"), currency=self._option("StripeCurrency"),
                            payment_method=NAME, min_topup=self._option("StripeMinTopUp"),
                            discounts=not self._option("StripePriceId"), label=f"Top-up: {body.amount}")

    def _return_urls(self, body: StripePay) -> tuple[str, str]:
        site = str(self._option("ServerAddress")).strip().rstrip("/")
        if not site:
            raise PaymentRefused("ServerAddress is empty: Stripe needs it to send users back after paying")
        urls = []
        for given, default in ((body.success_url, "/console/log"), (body.cancel_url, "/console/topup")):
            if not given:
                urls.append(site + default)
            elif _origin(given) == _origin(site):  # never an open redirect through Stripe
                urls.append(given)
            else:
                raise PaymentRefused("success_url and cancel_url must be on this site (ServerAddress)")
        return urls[0], urls[1]

    async def create_checkout(self, order: TopUpOrder, ask: PaymentAsk) -> Checkout:
        body = ask.body
        if not isinstance(body, StripePay):
            raise PaymentRefused("invalid request")
        success_url, cancel_url = self._return_urls(body)
        form = {"mode": "payment", "client_reference_id": order.trade_no, "success_url": success_url,
                "cancel_url": cancel_url, "metadata[trade_no]": order.trade_no,
                "metadata[user_id]": str(order.user_id)}
        price_id = str(self._option("StripePriceId"))
        if price_id:
            form.update({"line_items[0][price]": price_id, "line_items[0][quantity]": str(order.amount)})
        else:
            form.update({"line_items[0][quantity]": "1",
                         "line_items[0][price_data][currency]": order.currency.lower(),
                         "line_items[0][price_data][unit_amount]": str(to_minor_units(order.money, order.currency)),
                         "line_items[0][price_data][product_data][name]": f"Top-up {order.amount}"})
        if ask.payer.email:
            form["customer_email"] = ask.payer.email
        settings = self.services.settings
        url = str(settings.get("stripe_api_base")).rstrip("/") + "/v1/checkout/sessions"
        headers = {"Authorization": f"Bearer {self._option('StripeApiSecret')}", "Idempotency-Key": order.trade_no}
        async with httpx.AsyncClient(timeout=float(settings.get("stripe_timeout"))) as http:
            resp = await http.post(url, data=form, headers=headers)
        if resp.status_code // 100 != 2:
            raise PaymentRefused(f"Stripe refused the checkout (HTTP {resp.status_code})")
        session = resp.json()
        link = session.get("url") if isinstance(session, dict) else None
        if not isinstance(link, str) or not link.startswith("https://"):
            raise PaymentRefused("Stripe answered without a checkout link")
        return Checkout({"pay_link": link})

    async def verify_webhook(self, webhook: Webhook) -> PaymentEvent:
        signature.verify(webhook.body, webhook.headers.get("stripe-signature", ""),
                         str(self._option("StripeWebhookSecret")), webhook.received_at)
        try:
            event = json_loads(webhook.body)
        except ValueError:
            raise WebhookRejected("the signed body is not JSON") from None
        if not isinstance(event, dict):
            raise WebhookRejected("the signed body is not an event")
        kind = event.get("type")
        data = event.get("data")
        session = data.get("object") if isinstance(data, dict) else None
        event_id = str(event.get("id") or "")
        if kind not in PAID_EVENTS + ENDED_EVENTS or not isinstance(session, dict):
            return PaymentEvent("ignored", event_id=event_id)
        trade_no = session.get("client_reference_id")
        if not isinstance(trade_no, str) or not trade_no:
            return PaymentEvent("ignored", event_id=event_id)  # a session this gateway did not make
        if kind in ENDED_EVENTS:
            return PaymentEvent("expired", trade_no=trade_no, event_id=event_id)
        if session.get("status") != "complete" or session.get("payment_status") != "paid":
            # paid later (an async method): async_payment_succeeded completes the order
            return PaymentEvent("ignored", trade_no=trade_no, event_id=event_id)
        total, currency = session.get("amount_total"), session.get("currency")
        if isinstance(total, bool) or not isinstance(total, int) or total < 0 or not isinstance(currency, str):
            raise WebhookRejected("the session has no amount_total or currency")
        reference = session.get("payment_intent") or session.get("id") or ""
        return PaymentEvent("paid", trade_no=trade_no, money=from_minor_units(total, currency),
                            currency=currency.upper(), event_id=event_id,
                            reference=reference if isinstance(reference, str) else "")
