"""The objects plugins hand to the core through ``register_*`` hooks.

The ``register_*`` hooks are synchronous and run once at start; what they register
are these objects, whose methods the core calls directly on the hot path (a pluggy
call per request costs tens of microseconds). Methods documented as "may be async"
are awaited with :func:`faregate.awaitables.await_me_maybe` (a usage recorder's coroutine
by the ledger). Plugins import all of this through :mod:`faregate.api`.

One module a kind: :mod:`.values` (what they pass around), :mod:`.formats` (inbound
formats), :mod:`.providers` (channel types), :mod:`.policies` (endpoint drivers and the
policy objects of a request's way), :mod:`.payments` (payment gateways); storage engines and
plugin tables come from :mod:`faregate.db.backend`.
"""

from __future__ import annotations

from faregate.contracts.formats import InboundFormat, StreamEncoder
from faregate.contracts.payments import PaymentProvider  # a payment gateway
from faregate.contracts.policies import (
    Authenticator,
    ChannelFilter,
    ChannelSelector,
    EndpointDriver,
    Pricer,
    QuotaCheck,
    RequestRewriter,
    SecondFactor,
    UsageRecorder,
)
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
    "Authenticator",
    "BalanceFetch",
    "ChannelFilter",
    "ChannelProbe",
    "ChannelSelector",
    "DbModels",
    "EndpointDriver",
    "FakeUpstreamServer",
    "InboundFormat",
    "ModelInfo",
    "PassthroughStream",
    "PaymentProvider",
    "Pricer",
    "Provider",
    "QuotaCheck",
    "RequestRewriter",
    "RequestSummary",
    "Route",
    "SecondFactor",
    "StorageBackend",
    "StreamEncoder",
    "StreamParser",
    "TokenCount",
    "UpstreamRequest",
    "UpstreamTarget",
    "UsageRecorder",
    "WEBSOCKET",
]
