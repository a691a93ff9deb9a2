"""Stripe's webhook signature (``Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]``): HMAC-SHA256
of ``"<t>.<raw body>"`` keyed with the endpoint's secret (``whsec_…``), accepted when any ``v1``
matches (compared in constant time) and ``t`` is within the tolerance of now. The raw bytes are
signed: the body is never parsed or re-serialized before this passes."""

from __future__ import annotations

import hashlib
import hmac

from faregate.api import WebhookRejected

#: seconds a signature stays valid either side of now (the Stripe libraries' default)
TOLERANCE = 300
#: a header longer than this is no Stripe signature
MAX_HEADER = 2048


def compute(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def header(secret: str, timestamp: int, body: bytes) -> str:
    """The ``Stripe-Signature`` header Stripe would send for ``body`` at ``timestamp``."""
    return f"t={timestamp},v1={compute(secret, timestamp, body)}"


def verify(body: bytes, signature: str, secret: str, now: float, tolerance: int = TOLERANCE) -> None:
    """Raise :class:`WebhookRejected` unless ``signature`` signs ``body`` with ``secret`` within
    ``tolerance`` seconds of ``now``."""
    if not secret:
        raise WebhookRejected("no webhook secret is set", status=400)
    if not signature or len(signature) > MAX_HEADER:
        raise WebhookRejected("missing or oversized Stripe-Signature header", status=400)
    timestamp: int | None = None
    candidates: list[str] = []
    for part in signature.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isascii() and value.isdigit() and len(value) <= 12:
            timestamp = int(value)
        elif key == "v1" and value:
            candidates.append(value)
    if timestamp is None or not candidates:
        raise WebhookRejected("malformed Stripe-Signature header", status=400)
    expected = compute(secret, timestamp, body)
    if not any(hmac.compare_digest(expected.encode(), candidate.encode()) for candidate in candidates):
        raise WebhookRejected("bad signature", status=400)
    if abs(now - timestamp) > tolerance:
        raise WebhookRejected("stale signature (timestamp outside the tolerance)", status=400)
