"""The few helpers every hook call goes through, and a typed facade over the hooks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

from faregate.awaitables import await_me_maybe

if TYPE_CHECKING:
    from quart import Blueprint, Quart

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
    from faregate.settings import Setting, Settings
    from faregate.state.option_specs import OptionSpec
    from faregate.tokens import TokenCounter

log = logging.getLogger("faregate.plugins")


def resolve_settings(declared: list[Setting | OptionSpec], overrides: dict[str, Any] | None = None) -> Settings:
    """The settings a plugin set gives (the core's, then the plugins' from ``declared``, what
    ``register_settings`` registered), resolved: the gateway's, and ``faregate config show``'s
    without building a gateway."""
    from faregate.settings import CORE_SETTINGS, Setting, Settings

    return Settings([*CORE_SETTINGS, *(d for d in declared if isinstance(d, Setting))], overrides)


async def acall_all(results: list[Any]) -> list[Any]:
    """Await every hook result in hook order."""
    return [await await_me_maybe(r) for r in results]


def collect(caller: Callable[..., Any], **kwargs: Any) -> list[Any]:
    """Call a ``register_*`` hook and return everything its implementations registered,
    in hook order (tryfirst … trylast)."""
    items: list[Any] = []
    # one shared list: impls run in pluggy's order (tryfirst, then latest-registered
    # first, trylast defaults last) and each keeps its own registration order
    caller(register=items.append, **kwargs)
    return items


class GatewayHooks:
    """Typed facade: one method per hook, keyword-correct (tox 4's ``Plugin`` class)."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.hook = pm.hook

    def settings(self) -> list[Setting | OptionSpec]:
        return collect(self.hook.register_settings)

    def db_models(self) -> list[DbModels]:
        return collect(self.hook.register_db_models)

    def storage_backends(self) -> list[StorageBackend]:
        return collect(self.hook.register_storage_backends)

    def routes(self, services: Services) -> list[tuple[Blueprint, str | None]]:
        found: list[tuple[Blueprint, str | None]] = []

        def register(blueprint: Blueprint, url_prefix: str | None = None) -> None:
            found.append((blueprint, url_prefix))

        self.hook.register_routes(register=register, services=services)
        return found

    def endpoint_drivers(self, services: Services) -> list[EndpointDriver]:
        return collect(self.hook.register_endpoint_drivers, services=services)

    def formats(self, services: Services) -> list[InboundFormat]:
        return collect(self.hook.register_formats, services=services)

    def providers(self, services: Services) -> list[Provider]:
        return collect(self.hook.register_providers, services=services)

    def request_rewriters(self, services: Services) -> list[RequestRewriter]:
        return collect(self.hook.register_request_rewriters, services=services)

    def channel_filters(self, services: Services) -> list[ChannelFilter]:
        return collect(self.hook.register_channel_filters, services=services)

    def channel_selectors(self, services: Services) -> list[ChannelSelector]:
        return collect(self.hook.register_channel_selectors, services=services)

    def authenticators(self, services: Services) -> list[Authenticator]:
        return collect(self.hook.register_authenticators, services=services)

    def quota_checks(self, services: Services) -> list[QuotaCheck]:
        return collect(self.hook.register_quota_checks, services=services)

    def pricers(self, services: Services) -> list[Pricer]:
        return collect(self.hook.register_pricers, services=services)

    def usage_recorders(self, services: Services) -> list[UsageRecorder]:
        return collect(self.hook.register_usage_recorders, services=services)

    def exchange_observers(self, services: Services) -> list[Observer]:
        return collect(self.hook.register_exchange_observers, services=services)

    def payment_providers(self, services: Services) -> list[PaymentProvider]:
        return collect(self.hook.register_payment_providers, services=services)

    def second_factors(self, services: Services) -> list[SecondFactor]:
        return collect(self.hook.register_second_factors, services=services)

    def notifiers(self, services: Services) -> list[Notifier]:
        return collect(self.hook.register_notifiers, services=services)

    def token_counters(self, services: Services) -> list[TokenCounter]:
        return collect(self.hook.register_token_counters, services=services)

    async def startup(self, app: Quart, services: Services) -> None:
        await acall_all(self.hook.startup(app=app, services=services))

    async def shutdown(self, app: Quart, services: Services) -> None:
        for result in self.hook.shutdown(app=app, services=services):
            try:
                await await_me_maybe(result)
            except Exception:  # one plugin's failed shutdown must not stop the rest
                log.exception("a plugin's shutdown hook failed")
