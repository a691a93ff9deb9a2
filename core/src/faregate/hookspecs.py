"""Every hook Faregate calls. The single source of truth for plugin authors.

Rules (see docs/plugin-hooks.md): ``register_*`` hooks are synchronous, run once at
start and receive a ``register`` callable; what they register are objects whose
methods the core calls directly per request. Hooks that build such objects also offer
``services`` (:class:`faregate.services.Services`), the plugins' door to the running
gateway. ``startup``/``shutdown`` may return an awaitable. No hook is
``firstresult``: results are collected and the core decides. A hookimpl may accept
any subset of the arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from quart import Quart

    from faregate.accounts.notify import Notifier
    from faregate.billing.pending import UsageRecorder
    from faregate.contracts import (
        Authenticator,
        DbModels,
        InboundFormat,
        PaymentProvider,
        Provider,
        SecondFactor,
        StorageBackend,
    )
    from faregate.exchange.policies import (
        ChannelFilter,
        ChannelSelector,
        EndpointDriver,
        Pricer,
        QuotaCheck,
        RequestRewriter,
    )
    from faregate.observe.report import Observer
    from faregate.services import Services
    from faregate.settings import Setting
    from faregate.state.option_specs import OptionSpec
    from faregate.tokens import TokenCounter

PROJECT = "faregate"
hookspec = pluggy.HookspecMarker(PROJECT)


@hookspec
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    """Declare settings (read from ``FAREGATE_<NAME>`` environment variables at start) and
    runtime options (stored in the options table, edited through ``/api/option/``, typed
    and range-checked by the same registry as the core's).

    :param register: call with a :class:`faregate.settings.Setting` or a
        :class:`faregate.state.option_specs.OptionSpec` per key.
    """


@hookspec
def register_db_models(register: Callable[[DbModels], None]) -> None:
    """Add the plugin's own tables and their migrations, applied by ``faregate migrate``
    (and at start) on every storage engine.

    :param register: call with a :class:`faregate.contracts.DbModels`.
    """


@hookspec
def startup(app: Quart, services: Services) -> Any:
    """Run once when the service starts, after storage is ready. May return an awaitable.

    :param app: the Quart application.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def shutdown(app: Quart, services: Services) -> Any:
    """Run once when the service stops, before storage closes. May return an awaitable.

    :param app: the Quart application.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_routes(register: Callable[..., None], services: Services) -> None:
    """Add HTTP routes (webhooks, admin pages).

    :param register: ``register(blueprint, url_prefix=None)`` with a Quart blueprint.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_endpoint_drivers(register: Callable[[EndpointDriver], None], services: Services) -> None:
    """Add endpoint kinds: the driver that runs every route whose ``Route.kind`` is its
    ``kind`` (the core drives ``chat``, ``count_tokens``, ``models`` and ``model``).

    :param register: call with an object with ``kind`` and ``async handle(exchange)``.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_formats(register: Callable[[InboundFormat], None], services: Services) -> None:
    """Add inbound wire formats: the routes a format serves, how to parse a client
    request into the canonical model and render responses and stream events back.

    :param register: call with an :class:`faregate.contracts.InboundFormat`.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_providers(register: Callable[[Provider], None], services: Services) -> None:
    """Add channel types: how to build the upstream request, parse its response,
    stream and errors, and list its models.

    :param register: call with a :class:`faregate.contracts.Provider`.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_request_rewriters(register: Callable[[RequestRewriter], None], services: Services) -> None:
    """Add request rewriters, applied in order after a channel is chosen.

    :param register: call with an object that has ``rewrite(exchange)``.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_channel_filters(register: Callable[[ChannelFilter], None], services: Services) -> None:
    """Add channel filters that narrow the candidate channels of each attempt.

    :param register: call with an object that has ``filter(candidates, exchange)``.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_channel_selectors(register: Callable[[ChannelSelector], None], services: Services) -> None:
    """Add channel selectors; the first one that returns a channel wins. The core's
    default (priority, then weighted random) is registered ``trylast``.

    :param register: call with an object that has ``select(candidates, exchange)``.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_authenticators(register: Callable[[Authenticator], None], services: Services) -> None:
    """Add authenticators for API keys, login sessions or access tokens; the first
    non-None principal wins.

    :param register: call with an object with ``kind`` and ``authenticate(request)``.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_quota_checks(register: Callable[[QuotaCheck], None], services: Services) -> None:
    """Add checks run before a request is relayed; any denial wins.

    :param register: call with an object that has ``check(exchange, estimate)``.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_pricers(register: Callable[[Pricer], None], services: Services) -> None:
    """Add pricers; the first that returns a price wins. The core's default (new-api
    ratios from options) is registered ``trylast``.

    :param register: call with an object that has ``price(exchange, usage)``.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_usage_recorders(register: Callable[[UsageRecorder], None], services: Services) -> None:
    """Add recorders that receive each finished request's log entry (metrics,
    exports). Errors are logged, never propagated to the client.

    :param register: call with an object that has ``record(entry)``.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_exchange_observers(register: Callable[[Observer], None], services: Services) -> None:
    """Add observers called once per exchange as it ends (settled, refunded, or refused
    before any reservation) with its :class:`faregate.observe.report.ExchangeReport`:
    request id, route, model, user, key name, channel, status, attempts, end reason,
    latency and the gateway's own overhead, tokens and quota. They run on the event
    loop inside settlement: be quick, never block, never raise (an observer that raises
    is logged and skipped).

    :param register: call with a callable taking the report.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_payment_providers(register: Callable[[PaymentProvider], None], services: Services) -> None:
    """Add payment gateways (top-ups). The core serves the routes each declares (pay, price
    quote, webhook), stores the orders and completes each once; the gateway prices, starts the
    checkout and verifies its callbacks' signatures.

    :param register: call with a :class:`faregate.api.PaymentProvider`.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_second_factors(register: Callable[[SecondFactor], None], services: Services) -> None:
    """Add second factors (TOTP, passkeys): ``POST /api/verify`` checks them before a
    secret is revealed, and the admin's reset routes remove a user's enrolment.

    :param register: call with an object with ``method``, ``enrolled(user_id)``,
        ``verify(user_id, code, session)`` and ``reset(user_id)``.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_notifiers(register: Callable[[Notifier], None], services: Services) -> None:
    """Add ways to notify a user (quota warnings), one per ``notify_type`` of new-api's user
    settings (``email``, ``webhook``, ``bark``, ``gotify``); the first registered for a kind
    wins, and the core's own webhook notifier comes last. ``send`` runs in a background
    task, never on a request's path; what it raises is logged.

    :param register: call with a :class:`faregate.api.Notifier`: an object with ``kind`` and
        ``async send(target, note)`` (a :class:`faregate.api.NotifyTarget` and a
        :class:`faregate.api.Notification`).
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_token_counters(register: Callable[[TokenCounter], None], services: Services) -> None:
    """Add exact token counters (a tokenizer per model family). The core uses them where an
    exact count matters: the bill of an answer whose upstream reported no usage, and the
    ``count_tokens`` endpoints; reservations stay on the estimator's rule. For each counted
    request the first counter that knows the model wins; models none knows keep the rule.

    :param register: call with a :class:`faregate.tokens.TokenCounter`: an object with
        ``tokenizer(model)`` returning a :class:`faregate.tokens.Tokenizer` (``name``,
        ``count(text)``) or None.
    :param services: the plugins' door to the running gateway.
    """


@hookspec
def register_storage_backends(register: Callable[[StorageBackend], None]) -> None:
    """Add database engines, chosen by the scheme of ``FAREGATE_DB_URL``.

    :param register: call with a :class:`faregate.contracts.StorageBackend`.
    """
