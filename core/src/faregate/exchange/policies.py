"""The plugin contracts that speak of the exchange: endpoint drivers and the policy objects of
the request's way (rewriters, channel filters and selectors, quota checks, pricers). They stand
with the exchange they are handed; plugins import them through :mod:`faregate.api`."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from faregate.canonical import Usage
from faregate.errors import GatewayError

if TYPE_CHECKING:
    from faregate.billing.pricing import Price
    from faregate.contracts.inbound import Outcome
    from faregate.exchange.exchange import Exchange
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


class QuotaCheck(Protocol):
    """``check(exchange, estimate)`` returns None to allow or a ``GatewayError`` to deny.
    May be async."""

    def check(self, exchange: Exchange, estimate: int) -> GatewayError | None | Awaitable[GatewayError | None]: ...


class Pricer(Protocol):
    """``price(exchange, usage)`` returns a :class:`faregate.billing.pricing.Price` or
    None to let the next pricer decide (sync; hot path)."""

    def price(self, exchange: Exchange, usage: Usage | None) -> Price | None: ...
