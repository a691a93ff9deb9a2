"""A fake Creem for tests: a local checkout API (``POST /v1/checkouts`` with ``x-api-key``) that
records every checkout, and a webhook sender that signs events as Creem does (``creem-signature``:
hex HMAC-SHA256 of the raw body)::

    async with FakeCreem(products={"prod_1": (499, "USD")}) as creem:
        # settings={"creem_api_base": creem.base_url}; options CreemApiKey = creem.api_key,
        # CreemWebhookSecret = creem.webhook_secret, CreemProducts naming prod_1
        ...
        await creem.sender(gateway.base_url).send(creem.completed_event(creem.checkouts[-1]))
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from typing import Any

import httpx

from faregate.testing.fake_server import FakeServer, Request, Response
from faregate_payment_creem.provider import SIGNATURE_HEADER, signature

WEBHOOK_PATH = "/api/creem/webhook"


class FakeCreem(FakeServer):
    """Creem's checkout endpoint. ``products`` maps a product id to ``(price in minor units,
    currency)``; ``checkouts`` are the checkouts made (Creem's objects plus ``request``: the JSON
    the gateway sent)."""

    def __init__(self, api_key: str = "creem_test_faregate", webhook_secret: str = "whsec_creem_faregate",
                 products: dict[str, tuple[int, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(key=api_key, **kwargs)
        self.api_key = api_key
        self.webhook_secret = webhook_secret
        self.products = dict(products or {})
        self.checkouts: list[dict[str, Any]] = []

    def error_body(self, status: int, message: str | None = None) -> bytes:
        return json.dumps({"status": status, "error": "Bad Request", "message": [message or "error"]}).encode()

    async def answer(self, request: Request, response: Response) -> None:
        if request.method != "POST" or request.path != "/v1/checkouts":
            return response.send(404, self.error_body(404, "Not Found"))
        if request.headers.get("x-api-key") != self.api_key:
            return response.send(403, self.error_body(403, "Forbidden"))
        sent = request.json
        if not isinstance(sent, dict) or sent.get("product_id") not in self.products:
            return response.send(404, self.error_body(404, "Product not found"))
        checkout_id = f"ch_{self.id_prefix}{len(self.checkouts):04d}"
        checkout = {"id": checkout_id, "object": "checkout", "status": "pending", "mode": "test",
                    "product": sent["product_id"], "request_id": sent.get("request_id"),
                    "checkout_url": f"https://creem.io/test/checkout/{sent['product_id']}/{checkout_id}",
                    "metadata": sent.get("metadata"), "request": sent}
        self.checkouts.append(checkout)
        await response.reply(200, json.dumps({k: v for k, v in checkout.items() if k != "request"}).encode())

    def completed_event(self, checkout: dict[str, Any], **order: Any) -> dict[str, Any]:
        """The ``checkout.completed`` event of ``checkout``, its order paid in full; ``order``
        overrides fields of the order (``status``, ``amount``, ``currency`` …)."""
        price, currency = self.products[checkout["product"]]
        now = datetime.now(UTC).isoformat()
        paid = {"object": "order", "id": f"ord_{secrets.token_hex(8)}", "customer": "cust_1",
                "product": checkout["product"], "amount": price, "currency": currency, "sub_total": price,
                "tax_amount": 0, "amount_due": price, "amount_paid": price, "status": "paid", "type": "onetime",
                "transaction": f"tran_{secrets.token_hex(8)}", "created_at": now, "updated_at": now,
                "mode": "test"} | order
        return {"id": f"evt_{secrets.token_hex(10)}", "eventType": "checkout.completed",
                "created_at": int(datetime.now(UTC).timestamp() * 1000),
                "object": {"id": checkout["id"], "object": "checkout", "request_id": checkout["request_id"],
                           "order": paid, "product": {"id": checkout["product"], "price": price,
                                                      "currency": currency},
                           "customer": {"id": "cust_1", "email": "buyer@example.com"}, "status": "completed",
                           "metadata": checkout.get("metadata") or {}, "mode": "test"}}

    def sender(self, base_url: str, path: str = WEBHOOK_PATH) -> CreemWebhookSender:
        return CreemWebhookSender(base_url + path, self.webhook_secret)


class CreemWebhookSender:
    """Posts events to a webhook endpoint signed with ``secret`` as Creem signs them."""

    def __init__(self, url: str, secret: str) -> None:
        self.url = url
        self.secret = secret

    def sign(self, body: bytes, secret: str | None = None) -> str:
        """The ``creem-signature`` of ``body``."""
        return signature(secret if secret is not None else self.secret, body)

    async def send(self, event: dict[str, Any] | bytes, *, secret: str | None = None,
                   headers: dict[str, str] | None = None, client: httpx.AsyncClient | None = None) -> httpx.Response:
        """POST ``event`` (a dict is serialized; bytes go as they are) signed with ``secret``
        (default the endpoint's); ``headers`` replace the signed ones."""
        body = event if isinstance(event, bytes) else json.dumps(event).encode()
        sent = {SIGNATURE_HEADER: self.sign(body, secret),
                "Content-Type": "application/json", **(headers or {})}
        if client is not None:
            return await client.post(self.url, content=body, headers=sent)
        async with httpx.AsyncClient(timeout=30) as http:
            return await http.post(self.url, content=body, headers=sent)
