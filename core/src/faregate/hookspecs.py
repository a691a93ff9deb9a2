"""Every hook Faregate calls. The single source of truth for plugin authors.

Rules (see docs/plugin-hooks.md): ``register_*`` hooks are synchronous, run once at
start and receive a ``register`` callable; what they register are objects whose
methods the core calls directly per request. ``startup``/``shutdown`` may return an
awaitable. No hook is ``firstresult``: results are collected and the core decides.
A hookimpl may accept any subset of the arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from quart import Quart

    from faregate.contracts import (
        Authenticator,
        ChannelFilter,
        ChannelSelector,
        InboundFormat,
        PaymentProvider,
        Pricer,
        Provider,
        QuotaCheck,
        RequestRewriter,
        StorageBackend,
        UsageRecorder,
    )
    from faregate.settings import Setting

PROJECT = "faregate"
hookspec = pluggy.HookspecMarker(PROJECT)


@hookspec
def register_settings(register: Callable[[Setting], None]) -> None:
    """Declare settings (read from ``FAREGATE_<NAME>`` environment variables).

    :param register: call with a :class:`faregate.settings.Setting` per key.
    """


@hookspec
def startup(app: Quart) -> Any:
    """Run once when the service starts, after storage is ready. May return an awaitable.

    :param app: the Quart application; ``app.faregate`` is the gateway state.
    """


@hookspec
def shutdown(app: Quart) -> Any:
    """Run once when the service stops, before storage closes. May return an awaitable.

    :param app: the Quart application.
    """


@hookspec
def register_routes(register: Callable[..., None]) -> None:
    """Add HTTP routes (webhooks, admin pages).

    :param register: ``register(blueprint, url_prefix=None)`` with a Quart blueprint.
    """


@hookspec
def register_formats(register: Callable[[InboundFormat], None]) -> None:
    """Add inbound wire formats: the routes a format serves, how to parse a client
    request into the canonical model and render responses and stream events back.

    :param register: call with an :class:`faregate.contracts.InboundFormat`.
    """


@hookspec
def register_providers(register: Callable[[Provider], None]) -> None:
    """Add channel types: how to build the upstream request, parse its response,
    stream and errors, and list its models.

    :param register: call with a :class:`faregate.contracts.Provider`.
    """


@hookspec
def register_request_rewriters(register: Callable[[RequestRewriter], None]) -> None:
    """Add request rewriters, applied in order after a channel is chosen.

    :param register: call with an object that has ``rewrite(ctx)``.
    """


@hookspec
def register_channel_filters(register: Callable[[ChannelFilter], None]) -> None:
    """Add channel filters that narrow the candidate channels of each attempt.

    :param register: call with an object that has ``filter(candidates, ctx)``.
    """


@hookspec
def register_channel_selectors(register: Callable[[ChannelSelector], None]) -> None:
    """Add channel selectors; the first one that returns a channel wins. The core's
    default (priority, then weighted random) is registered ``trylast``.

    :param register: call with an object that has ``select(candidates, ctx)``.
    """


@hookspec
def register_authenticators(register: Callable[[Authenticator], None]) -> None:
    """Add authenticators for API keys, login sessions or access tokens; the first
    non-None principal wins.

    :param register: call with an object with ``kind`` and ``authenticate(request)``.
    """


@hookspec
def register_quota_checks(register: Callable[[QuotaCheck], None]) -> None:
    """Add checks run before a request is relayed; any denial wins.

    :param register: call with an object that has ``check(ctx, estimate)``.
    """


@hookspec
def register_pricers(register: Callable[[Pricer], None]) -> None:
    """Add pricers; the first that returns a price wins. The core's default (new-api
    ratios from options) is registered ``trylast``.

    :param register: call with an object that has ``price(ctx, usage)``.
    """


@hookspec
def register_usage_recorders(register: Callable[[UsageRecorder], None]) -> None:
    """Add recorders that receive each finished request's log entry (metrics,
    exports). Errors are logged, never propagated to the client.

    :param register: call with an object that has ``record(entry)``.
    """


@hookspec
def register_payment_providers(register: Callable[[PaymentProvider], None]) -> None:
    """Add payment gateways (top-ups). Their webhooks come through ``register_routes``.

    :param register: call with an object with ``name``.
    """


@hookspec
def register_storage_backends(register: Callable[[StorageBackend], None]) -> None:
    """Add database engines, chosen by the scheme of ``FAREGATE_DB_URL``.

    :param register: call with a :class:`faregate.contracts.StorageBackend`.
    """
