"""Faregate plugin: OpenTelemetry tracing, one span per client request, exported over
OTLP/HTTP. Off unless ``FAREGATE_OTEL_ENABLED=true``: disabled, it declares its settings
and nothing else (no observer, no provider, no thread).

The entry point in ``pyproject.toml`` names this module. Per gateway (each worker builds
its own): the observer is registered when the gateway is built, its tracer provider starts
at ``startup`` and is shut down (the queued spans exported) at ``shutdown``. The hooks import
OpenTelemetry when a gateway is built with tracing on: every command loads the plugins.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import OptionSpec, Services, Setting
    from faregate_otel.tracing import ExchangeTracer, Observer

__version__ = "0.1.0"

#: each gateway's tracer, by its ``services`` (which take no weak reference); weak values,
#: so a gateway that was built but never served leaves nothing behind
_tracers: weakref.WeakValueDictionary[int, ExchangeTracer] = weakref.WeakValueDictionary()


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    from faregate_otel.config import SETTINGS

    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_exchange_observers(register: Callable[[Observer], None], services: Services) -> None:
    from faregate_otel.config import OtelConfig

    config = OtelConfig.read(services.settings)
    _tracers.pop(id(services), None)
    if not config.enabled:
        return
    from faregate_otel.tracing import ExchangeTracer

    tracer = ExchangeTracer(config)
    _tracers[id(services)] = tracer
    register(tracer)


@hookimpl
def startup(services: Services) -> None:
    tracer = _tracers.get(id(services))
    if tracer is not None:
        tracer.start()


@hookimpl
async def shutdown(services: Services) -> None:
    tracer = _tracers.pop(id(services), None)
    provider = tracer.detach() if tracer is not None else None
    if provider is not None:  # flushing waits on the collector: not on the event loop
        await asyncio.to_thread(provider.shutdown)
