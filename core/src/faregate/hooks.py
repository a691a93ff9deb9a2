"""The few helpers every hook call goes through, and a typed facade over the hooks."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import pluggy

log = logging.getLogger("faregate.plugins")


async def await_me_maybe(value: Any) -> Any:
    """Call ``value`` if callable, then await it if awaitable (datasette's convention)."""
    if callable(value):
        value = value()
    if inspect.isawaitable(value):
        value = await value
    return value


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

    def settings(self) -> list[Any]:
        return collect(self.hook.register_settings)

    def routes(self) -> list[tuple[Any, str | None]]:
        found: list[tuple[Any, str | None]] = []

        def register(blueprint: Any, url_prefix: str | None = None) -> None:
            found.append((blueprint, url_prefix))

        self.hook.register_routes(register=register)
        return found

    def formats(self) -> list[Any]:
        return collect(self.hook.register_formats)

    def providers(self) -> list[Any]:
        return collect(self.hook.register_providers)

    def request_rewriters(self) -> list[Any]:
        return collect(self.hook.register_request_rewriters)

    def channel_filters(self) -> list[Any]:
        return collect(self.hook.register_channel_filters)

    def channel_selectors(self) -> list[Any]:
        return collect(self.hook.register_channel_selectors)

    def authenticators(self) -> list[Any]:
        return collect(self.hook.register_authenticators)

    def quota_checks(self) -> list[Any]:
        return collect(self.hook.register_quota_checks)

    def pricers(self) -> list[Any]:
        return collect(self.hook.register_pricers)

    def usage_recorders(self) -> list[Any]:
        return collect(self.hook.register_usage_recorders)

    def payment_providers(self) -> list[Any]:
        return collect(self.hook.register_payment_providers)

    def storage_backends(self) -> list[Any]:
        return collect(self.hook.register_storage_backends)

    async def startup(self, app: Any) -> None:
        await acall_all(self.hook.startup(app=app))

    async def shutdown(self, app: Any) -> None:
        for result in self.hook.shutdown(app=app):
            try:
                await await_me_maybe(result)
            except Exception:  # one plugin's failed shutdown must not stop the rest
                log.exception("a plugin's shutdown hook failed")
