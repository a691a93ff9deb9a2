"""The objects plugins hand to the core through ``register_*`` hooks.

The ``register_*`` hooks are synchronous and run once at start; what they register
are these objects, whose methods the core calls directly on the hot path (a pluggy
call per request costs tens of microseconds). Methods documented as "may be async"
are awaited with :func:`faregate.awaitables.await_me_maybe` (a usage recorder's coroutine
by the ledger). Plugins import all of this through :mod:`faregate.api`.

One module a kind: :mod:`.values` (what they pass around), :mod:`.inbound` (a client
request as the edge hands it, and the outcome sent back), :mod:`.formats` (inbound formats),
:mod:`.providers` (channel types), :mod:`.identity` (authenticators and second factors),
:mod:`.payments` (payment gateways); storage engines and plugin tables come from
:mod:`faregate.db.backend`. The contracts that speak of a request's exchange (endpoint
drivers, rewriters, channel filters and selectors, quota checks, pricers) stand with it in
:mod:`faregate.exchange.policies`, the usage recorder with the ledger
(:mod:`faregate.billing.pending`): this package sits below both.
"""

from __future__ import annotations

from faregate.contracts.formats import InboundFormat, StreamEncoder
from faregate.contracts.identity import Authenticator, AuthRequest, SecondFactor
from faregate.contracts.inbound import InboundRequest, Outcome, WebSocketPeer
from faregate.contracts.payments import PaymentProvider  # a payment gateway
from faregate.contracts.providers import FakeUpstreamServer, PassthroughStream, Provider, StreamParser
from faregate.contracts.values import (
    WEBSOCKET,
    BalanceFetch,
    ChannelProbe,
    ModelInfo,
    RequestSummary,
    Route,
    TokenCount,
    UpstreamRequest,
    UpstreamTarget,
)
from faregate.db.backend import DbModels, StorageBackend

__all__ = [
    "AuthRequest",
    "Authenticator",
    "BalanceFetch",
    "ChannelProbe",
    "DbModels",
    "FakeUpstreamServer",
    "InboundFormat",
    "InboundRequest",
    "ModelInfo",
    "Outcome",
    "PassthroughStream",
    "PaymentProvider",
    "Provider",
    "RequestSummary",
    "Route",
    "SecondFactor",
    "StorageBackend",
    "StreamEncoder",
    "StreamParser",
    "TokenCount",
    "UpstreamRequest",
    "UpstreamTarget",
    "WEBSOCKET",
    "WebSocketPeer",
]
