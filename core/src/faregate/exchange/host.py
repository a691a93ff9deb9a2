"""What the exchange layer sees of the running gateway: a typed view, not the gateway.

:class:`faregate.gateway.Gateway` (the assembly layer) satisfies :class:`ExchangeHost`
structurally; the exchange, the upstream client's users, the metrics and the HTTP edge
name this view instead of importing the gateway, so nothing below the assembly layer
imports it (the layers contract in ``pyproject.toml``). Members are read-only properties:
a plain attribute of the gateway satisfies them, and a view cannot rebind them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from faregate.accounts.notify import Notifier
    from faregate.billing.ledger import QuotaLedger
    from faregate.contracts import Authenticator, InboundFormat, Provider
    from faregate.exchange.big_bodies import BigBodyLane
    from faregate.exchange.breaker import Breakers
    from faregate.exchange.options import RelayOptions
    from faregate.exchange.policies import (
        ChannelFilter,
        ChannelSelector,
        EndpointDriver,
        Pricer,
        QuotaCheck,
        RequestRewriter,
    )
    from faregate.limits.limiter import Limiter
    from faregate.observe.report import Observer
    from faregate.security.crypto import SecretBox
    from faregate.settings import Settings
    from faregate.state.changefeed import ChangeFeed
    from faregate.state.snapshot import Snapshot
    from faregate.tokens import Tokenizer
    from faregate.upstream import UpstreamClient


class ExchangeHost(Protocol):
    """The parts of one worker's gateway a request's way through the gate uses."""

    @property
    def settings(self) -> Settings: ...
    @property
    def snapshot(self) -> Snapshot[RelayOptions]: ...
    @property
    def feed(self) -> ChangeFeed: ...
    @property
    def box(self) -> SecretBox: ...
    @property
    def ledger(self) -> QuotaLedger: ...
    @property
    def breakers(self) -> Breakers: ...
    @property
    def upstream(self) -> UpstreamClient: ...
    @property
    def big_bodies(self) -> BigBodyLane: ...
    @property
    def limiter(self) -> Limiter: ...
    @property
    def started_at(self) -> int: ...
    #: by name, by endpoint kind, by channel type
    @property
    def formats(self) -> Mapping[str, InboundFormat]: ...
    @property
    def drivers(self) -> Mapping[str, EndpointDriver]: ...
    @property
    def providers(self) -> Mapping[int, Provider]: ...
    #: a list the metrics append their observer to
    @property
    def observers(self) -> list[Observer]: ...
    @property
    def api_key_authenticators(self) -> list[Authenticator]: ...
    @property
    def session_authenticators(self) -> list[Authenticator]: ...
    @property
    def request_rewriters(self) -> list[RequestRewriter]: ...
    @property
    def channel_filters(self) -> list[ChannelFilter]: ...
    @property
    def channel_selectors(self) -> list[ChannelSelector]: ...
    @property
    def quota_checks(self) -> list[QuotaCheck]: ...
    @property
    def pricers(self) -> list[Pricer]: ...
    #: how users are told things, by kind (the root, when the relay disables a channel)
    @property
    def notifiers(self) -> Mapping[str, Notifier]: ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...
    def tokenizer(self, model: str) -> Tokenizer | None: ...
    async def disable_channel(self, channel_id: int, reason: str) -> bool: ...
