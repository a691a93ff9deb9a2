"""What a payment gateway plugin hands the core (``register_payment_providers``): a
:class:`PaymentProvider` and the values passing between it and the core's top-up flow.

The core owns the flow and every check that must hold for all gateways; the provider owns
what differs between them. Per top-up:

1. ``POST`` on one of the provider's ``routes.pay`` paths (a logged-in user): the core
   validates the body against ``routes.pay_body``, refuses while :meth:`PaymentProvider.problem`
   names a problem, asks :meth:`~PaymentProvider.quote` what the order costs, stores a pending
   order (``top_ups``) bound to the user and the provider, then asks
   :meth:`~PaymentProvider.create_checkout` where to send the user. ``routes.amount`` paths
   answer the quote alone.
2. The gateway's callback on one of ``routes.webhook``: the core caps the body
   (:attr:`PaymentProvider.max_webhook_bytes`, refused before it is read), refuses while the
   provider has a problem (an empty secret is never used to verify), and hands the raw bytes to
   :meth:`~PaymentProvider.verify_webhook`, which checks the signature **before** parsing and
   returns a :class:`PaymentEvent`. Nothing from the request is logged before that.
3. The core completes the order (``faregate.payments.orders.complete_top_up``): once, in one
   transaction with the credit and a top-up log row, only if the order is the provider's, still
   pending, and the amount and currency paid are the order's.
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel

#: the largest webhook body read by default (bytes): gateways send a few kB
WEBHOOK_MAX_BYTES = 64 * 1024


class PaymentRefused(Exception):
    """A payment that cannot start (an amount below the minimum, an unknown product, the
    gateway refused the checkout): answered ``{"message": "error", "data": message}``. The
    message is shown to the user: never put a secret or a gateway's raw answer in it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class WebhookRejected(Exception):
    """A callback that is not the gateway's (a bad or stale signature, a malformed body):
    answered with ``status`` (400 or 401) and nothing credited. The message is logged: a
    fixed phrase that never quotes the request."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True, slots=True)
class PaymentRoutes:
    """Where the core serves a provider (new-api's paths; aliases are just more paths).

    ``pay`` and ``amount`` are ``POST`` routes for a logged-in user, answered in new-api's
    payment envelope ``{"message": "success" | "error", "data": ...}``; their JSON bodies are
    validated against ``pay_body`` / ``amount_body`` (pydantic models, e.g. subclasses of
    ``faregate.api.Body``: give them names unique across plugins, they are the OpenAPI
    document's). ``webhook`` paths take the gateway's callbacks with ``webhook_methods``,
    answered with the management envelope, or, when ``webhook_text``, 200 with the plain text
    ``success`` / ``fail`` (Epay's protocol)."""

    pay: tuple[str, ...] = ()
    amount: tuple[str, ...] = ()
    webhook: tuple[str, ...] = ()
    pay_body: type[BaseModel] | None = None
    amount_body: type[BaseModel] | None = None
    webhook_methods: tuple[str, ...] = ("POST",)
    webhook_text: bool = False


@dataclass(frozen=True, slots=True)
class Payer:
    """The logged-in user starting a payment."""

    id: int
    username: str
    email: str
    group: str


@dataclass(frozen=True, slots=True)
class PaymentAsk:
    """A ``pay`` or ``amount`` request: who asks, the validated body (an instance of the
    route's ``pay_body`` / ``amount_body``), and the client's address."""

    payer: Payer
    body: BaseModel
    client_ip: str = ""


@dataclass(frozen=True, slots=True)
class Quote:
    """What an order costs and brings: ``amount`` units bought (new-api's ``top_ups.amount``),
    ``money`` to pay in ``currency`` (ISO 4217, upper case; rounded to the currency's minor
    unit: the gateway must charge exactly this), ``quota`` credited once paid, the
    ``payment_method`` recorded on the order, and a ``label`` for the checkout page."""

    amount: int
    money: Decimal
    currency: str
    quota: int
    payment_method: str
    label: str = ""


@dataclass(frozen=True, slots=True)
class TopUpOrder:
    """A stored order (a row of ``top_ups``) as the provider sees it."""

    id: int
    trade_no: str
    user_id: int
    provider: str
    payment_method: str
    amount: int
    money: Decimal
    currency: str
    quota: int
    status: str
    create_time: int
    complete_time: int = 0


@dataclass(frozen=True, slots=True)
class Checkout:
    """Where to send the user: answered ``{"message": "success", "data": data, **extra}``
    (Stripe: ``data = {"pay_link": url}``; Epay: ``data`` = the signed form, ``extra =
    {"url": submit_url}``)."""

    data: Any
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Webhook:
    """A gateway's callback as received: header names in lower case, the query string, the
    raw body (at most the provider's ``max_webhook_bytes``) and when it arrived (unix
    seconds, for a signature's timestamp tolerance)."""

    method: str
    headers: Mapping[str, str]
    query: Mapping[str, str]
    body: bytes
    received_at: float


#: ``paid``: the order's money arrived (complete it); ``expired``: the checkout ended unpaid
#: (a pending order becomes ``expired``); ``ignored``: verified, but nothing to do here
EventKind = Literal["paid", "expired", "ignored"]


@dataclass(frozen=True, slots=True)
class PaymentEvent:
    """A verified callback. ``trade_no`` names our order (what :meth:`PaymentProvider.create_checkout`
    gave the gateway); ``money`` and ``currency`` are what the gateway says was paid, in major
    units (``Decimal("12.34")``, ``"USD"``): required for ``paid``, compared with the order's.
    ``event_id`` and ``reference`` (the gateway's payment id) go to the log;
    ``payment_method`` (when the gateway says which method was used) is recorded on the order."""

    kind: EventKind
    trade_no: str = ""
    money: Decimal | None = None
    currency: str = ""
    event_id: str = ""
    reference: str = ""
    payment_method: str = ""


def unset_problem(gateway: str, value: Callable[[str], Any], keys: Iterable[str]) -> str | None:
    """The usual :meth:`PaymentProvider.problem`: ``"<gateway> is not set up: <key> is empty"``
    for the first of ``keys`` (its secrets, merchant id …) whose option ``value(key)`` is
    empty or blank, None when all are set. One rule for every gateway: an empty secret never
    enables one."""
    for key in keys:
        if not str(value(key)).strip():
            return f"{gateway} is not set up: {key} is empty"
    return None


class PaymentProvider(ABC):
    """A payment gateway (Stripe, Creem, Epay, …), registered with ``register_payment_providers``.

    ``name`` is stored on every order it makes (``top_ups.payment_provider``): an event it
    verifies completes only orders of that name. Keep ``services`` (the hook's argument) to read
    options. Every method except the two async ones is cheap and synchronous."""

    #: the provider's name, also the orders' ``payment_provider``: ``stripe``, ``creem``, ``epay``
    name: str
    #: where the core serves it
    routes: PaymentRoutes = PaymentRoutes()
    #: the largest webhook body read; a larger one is refused (413) before a byte is read
    max_webhook_bytes: int = WEBHOOK_MAX_BYTES

    @abstractmethod
    def problem(self) -> str | None:
        """Why the provider cannot take payments now (``"Stripe is not set up:
        StripeWebhookSecret is empty"``), None when it can. While it names a problem, payments
        are refused with it, ``GET /api/user/topup/info`` shows the provider disabled, and
        callbacks are refused unverified: a provider with an empty secret never enables."""

    def info(self) -> dict[str, Any]:
        """What ``GET /api/user/topup/info`` shows of the provider (new-api's keys, e.g.
        ``{"enable_stripe_topup": True, "stripe_min_topup": 1}``)."""
        return {}

    def pay_methods(self) -> list[dict[str, str]]:
        """The entries it adds to the top-up info's ``pay_methods`` (``{name, type, color, ...}``)."""
        return []

    def new_trade_no(self, user_id: int) -> str:
        """A fresh, unguessable order reference (unique: a collision is retried)."""
        return "ref_" + secrets.token_hex(20)

    @abstractmethod
    def quote(self, ask: PaymentAsk) -> Quote:
        """What the order ``ask`` describes costs; raise :class:`PaymentRefused` to refuse it."""

    @abstractmethod
    async def create_checkout(self, order: TopUpOrder, ask: PaymentAsk) -> Checkout:
        """Start the payment of the stored pending ``order`` with the gateway; raise
        :class:`PaymentRefused` when it cannot (the order is then marked failed)."""

    @abstractmethod
    async def verify_webhook(self, webhook: Webhook) -> PaymentEvent:
        """Check the callback's signature over the raw bytes (``hmac.compare_digest``) before
        parsing anything, then read it; raise :class:`WebhookRejected` when it is not the
        gateway's. Called only while :meth:`problem` is None."""
