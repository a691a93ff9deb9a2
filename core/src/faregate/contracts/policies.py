"""Endpoint drivers and the policy objects of the request's way: rewriters, channel filters
and selectors, authenticators, quota checks, pricers, usage recorders, second factors."""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol

from faregate.canonical import Usage
from faregate.errors import GatewayError

if TYPE_CHECKING:
    from faregate.billing.ledger import LogEntry
    from faregate.billing.pricing import Price
    from faregate.exchange.exchange import Exchange
    from faregate.exchange.inbound import Outcome
    from faregate.principals import AuthRequest, Principal
    from faregate.state.snapshot import ChannelEntry


class EndpointDriver(Protocol):
    """Runs the routes of one ``kind``: reads the exchange's inbound request, goes
    through admission and attempts as the kind needs, and returns an outcome for the
    edge to send. Errors are raised as ``GatewayError`` (rendered in the client's
    format by the core, reservation refunded)."""

    kind: str

    async def handle(self, exchange: Exchange) -> Outcome: ...


# ---- policy objects ------------------------------------------------------------------------


class RequestRewriter(Protocol):
    """``rewrite(exchange)`` may change ``exchange.upstream_model``, the canonical request
    or the body before the upstream call. May be async."""

    def rewrite(self, exchange: Exchange) -> Awaitable[None] | None: ...


class ChannelFilter(Protocol):
    """``filter(candidates, exchange)`` returns the channels still allowed (sync)."""

    def filter(self, candidates: list[ChannelEntry], exchange: Exchange) -> list[ChannelEntry]: ...


class ChannelSelector(Protocol):
    """``select(candidates, exchange)`` returns one channel or None (sync; hot path)."""

    def select(self, candidates: list[ChannelEntry], exchange: Exchange) -> ChannelEntry | None: ...


class Authenticator(Protocol):
    """``kind`` is ``api_key``, ``session`` or ``access_token``; ``authenticate(request)``
    returns a principal, or None to let the next authenticator look. An ``api_key``
    authenticator may also raise ``GatewayError`` to refuse a key it recognises
    (disabled, expired, wrong IP…). May be async."""

    kind: str

    def authenticate(self, request: AuthRequest) -> Principal | None | Awaitable[Principal | None]: ...


class QuotaCheck(Protocol):
    """``check(exchange, estimate)`` returns None to allow or a ``GatewayError`` to deny.
    May be async."""

    def check(self, exchange: Exchange, estimate: int) -> GatewayError | None | Awaitable[GatewayError | None]: ...


class Pricer(Protocol):
    """``price(exchange, usage)`` returns a :class:`faregate.billing.pricing.Price` or
    None to let the next pricer decide (sync; hot path)."""

    def price(self, exchange: Exchange, usage: Usage | None) -> Price | None: ...


class UsageRecorder(Protocol):
    """``record(entry)`` receives every finished request's log entry
    (:class:`faregate.billing.ledger.LogEntry`) at the ledger's next flush. May be
    ``async def`` (the ledger awaits a coroutine it returns); errors are logged, never
    propagated."""

    def record(self, entry: LogEntry) -> Coroutine[Any, Any, None] | None: ...


class SecondFactor(Protocol):
    """A second proof of who a user is (TOTP, passkeys…), named by ``method`` (``"2fa"``,
    ``"passkey"``: the names ``POST /api/verify`` takes). The core asks it whether a user
    has enrolled, to check a code before secrets are revealed, and to remove a user's
    enrolment when an admin resets it. Each method may be async. ``verify`` gets the
    login session so a ceremony begun on an earlier request (a WebAuthn challenge) can
    be finished.

    Optional attributes: ``at_login = True`` makes every login of an enrolled user wait
    for this factor (new-api's ``require_2fa`` step, ``POST /api/user/login/2fa``);
    ``needs_code = False`` lets ``POST /api/verify`` call ``verify`` with an empty code
    (the proof came through the factor's own routes, as a passkey's does)."""

    method: str

    def enrolled(self, user_id: int) -> bool | Awaitable[bool]: ...

    def verify(self, user_id: int, code: str, session: MutableMapping[str, Any]) -> bool | Awaitable[bool]: ...

    def reset(self, user_id: int) -> bool | Awaitable[bool]:
        """Remove the user's enrolment; True when there was one."""
        ...
