"""A fake Stripe for tests: a local Checkout Sessions API (``POST /v1/checkout/sessions``, form
encoded, ``Authorization: Bearer <secret key>``) that records every session, and a webhook
sender that signs events as Stripe does (``Stripe-Signature: t=…,v1=…``)::

    async with FakeStripe() as stripe:
        # point the gateway at it: settings={"stripe_api_base": stripe.base_url}, and the options
        # StripeApiSecret = stripe.api_key, StripeWebhookSecret = stripe.webhook_secret
        ...
        session = stripe.sessions[-1]
        sender = stripe.sender(gateway.base_url)
        await sender.send(stripe.event("checkout.session.completed", session))
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qsl

import httpx

from faregate.testing.fake_server import FakeServer, Request, Response
from faregate_payment_stripe import signature

WEBHOOK_PATH = "/api/stripe/webhook"


class FakeStripe(FakeServer):
    """Stripe's Checkout Sessions endpoint. ``prices`` maps a Price id to ``(unit_amount,
    currency)`` for sessions sold by Price; ``sessions`` are the sessions made, as Stripe's
    session objects (``amount_total`` in minor units, ``client_reference_id``, ``metadata``)
    plus ``form``: the parameters the gateway sent."""

    def __init__(self, api_key: str = "sk_test_faregate", webhook_secret: str = "whsec_faregate_test",
                 **kwargs: Any) -> None:
        super().__init__(key=api_key, **kwargs)
        self.api_key = api_key
        self.webhook_secret = webhook_secret
        self.prices: dict[str, tuple[int, str]] = {}
        self.sessions: list[dict[str, Any]] = []

    def error_body(self, status: int, message: str | None = None) -> bytes:
        return json.dumps({"error": {"type": "invalid_request_error", "message": message or "error"}}).encode()

    async def answer(self, request: Request, response: Response) -> None:
        if request.method != "POST" or request.path != "/v1/checkout/sessions":
            return response.send(404, self.error_body(404, "Unrecognized request URL"))
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return response.send(401, self.error_body(401, "Invalid API Key provided"))
        form = dict(parse_qsl(request.body.decode(), keep_blank_values=True))
        quantity = int(form.get("line_items[0][quantity]", "1"))
        price = form.get("line_items[0][price]")
        if price is not None:
            if price not in self.prices:
                return response.send(400, self.error_body(400, f"No such price: '{price}'"))
            unit_amount, currency = self.prices[price]
        else:
            unit_amount = int(form["line_items[0][price_data][unit_amount]"])
            currency = form["line_items[0][price_data][currency]"]
        for required in ("mode", "success_url", "client_reference_id"):
            if not form.get(required):
                return response.send(400, self.error_body(400, f"Missing required param: {required}."))
        session_id = f"cs_test_{self.id_prefix}{len(self.sessions):04d}"
        session = {"id": session_id, "object": "checkout.session", "mode": form["mode"],
                   "url": f"https://checkout.stripe.com/c/pay/{session_id}",
                   "client_reference_id": form["client_reference_id"], "amount_total": unit_amount * quantity,
                   "currency": currency.lower(), "status": "open", "payment_status": "unpaid",
                   "customer_email": form.get("customer_email"),
                   "metadata": {k[9:-1]: v for k, v in form.items() if k.startswith("metadata[")},
                   "payment_intent": f"pi_{secrets.token_hex(8)}", "form": form}
        self.sessions.append(session)
        await response.reply(200, json.dumps({k: v for k, v in session.items() if k != "form"}).encode())

    def event(self, kind: str, session: dict[str, Any], **changes: Any) -> dict[str, Any]:
        """A Stripe event of type ``kind`` about ``session``, in the state the type implies
        (``checkout.session.completed``: complete and paid; ``.expired``: expired), with
        ``changes`` applied to the session object."""
        state = {"checkout.session.completed": {"status": "complete", "payment_status": "paid"},
                 "checkout.session.async_payment_succeeded": {"status": "complete", "payment_status": "paid"},
                 "checkout.session.expired": {"status": "expired", "payment_status": "unpaid"}}.get(kind, {})
        obj = {k: v for k, v in session.items() if k != "form"} | state | changes
        return {"id": f"evt_{secrets.token_hex(12)}", "object": "event", "api_version": "2024-06-20",
                "created": int(time.time()), "type": kind, "livemode": False, "data": {"object": obj}}

    def sender(self, base_url: str, path: str = WEBHOOK_PATH) -> StripeWebhookSender:
        return StripeWebhookSender(base_url + path, self.webhook_secret)


class StripeWebhookSender:
    """Posts events to a webhook endpoint signed with ``secret`` as Stripe signs them."""

    def __init__(self, url: str, secret: str) -> None:
        self.url = url
        self.secret = secret

    def signed(self, body: bytes, *, timestamp: int | None = None, secret: str | None = None) -> dict[str, str]:
        when = int(time.time()) if timestamp is None else timestamp
        return {"Stripe-Signature": signature.header(secret if secret is not None else self.secret, when, body),
                "Content-Type": "application/json; charset=utf-8"}

    async def send(self, event: dict[str, Any] | bytes, *, timestamp: int | None = None, secret: str | None = None,
                   headers: dict[str, str] | None = None, client: httpx.AsyncClient | None = None) -> httpx.Response:
        """POST ``event`` (a dict is serialized; bytes go as they are), signed at ``timestamp``
        (default now) with ``secret`` (default the endpoint's); ``headers`` replace the signed ones."""
        body = event if isinstance(event, bytes) else json.dumps(event).encode()
        sent = {**self.signed(body, timestamp=timestamp, secret=secret), **(headers or {})}
        if client is not None:
            return await client.post(self.url, content=body, headers=sent)
        async with httpx.AsyncClient(timeout=30) as http:
            return await http.post(self.url, content=body, headers=sent)
