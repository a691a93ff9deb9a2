"""Faregate plugin: the OpenAI format (chat completions, embeddings, moderations, the
Realtime API's WebSocket, and new-api's 501s for the paths it does not serve) and the
channel types that speak it: OpenAI and its compatible vendors (:mod:`.presets`), Azure
OpenAI, Jina, Codex.

The hooks import what they register: every command loads the plugins, and most (``faregate
config show``, ``doctor``) need the settings alone (:mod:`.settings`), not the relay. The classes
other plugins build on (``OpenAICompatibleProvider``: docs/writing-a-plugin.md) are imported from
here on first use."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import EndpointDriver, InboundFormat, OptionSpec, Pricer, Provider, Services, Setting
    from faregate_adapter_openai.azure import AzureOpenAIProvider
    from faregate_adapter_openai.format import OpenAIChatFormat
    from faregate_adapter_openai.provider import OpenAICompatibleProvider, OpenAIProvider

__all__ = ["AzureOpenAIProvider", "OpenAIChatFormat", "OpenAICompatibleProvider", "OpenAIProvider"]

#: the public classes, by the module each is imported from when first asked for (PEP 562)
_EXPORTS = {"AzureOpenAIProvider": "azure", "OpenAIChatFormat": "format", "OpenAICompatibleProvider": "provider",
            "OpenAIProvider": "provider"}

if not TYPE_CHECKING:  # type checkers see the imports above

    def __getattr__(name: str) -> object:
        if name not in _EXPORTS:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value


@hookimpl
def register_formats(register: Callable[[InboundFormat], None]) -> None:
    from faregate_adapter_openai.format import OpenAIChatFormat
    from faregate_adapter_openai.responses_api.format import OpenAIResponsesFormat

    register(OpenAIChatFormat())
    register(OpenAIResponsesFormat())


@hookimpl
def register_providers(register: Callable[[Provider], None], services: Services) -> None:
    from faregate_adapter_openai.azure import AzureOpenAIProvider
    from faregate_adapter_openai.codex import CodexProvider
    from faregate_adapter_openai.jina import JinaProvider
    from faregate_adapter_openai.provider import OpenAIProvider

    register(OpenAIProvider(services))
    register(AzureOpenAIProvider())
    register(CodexProvider())
    register(JinaProvider())


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    from faregate_adapter_openai.settings import IMAGE_JOB_SETTINGS, REALTIME_SETTINGS

    for setting in (*REALTIME_SETTINGS, *IMAGE_JOB_SETTINGS):
        register(setting)


@hookimpl
def register_endpoint_drivers(register: Callable[[EndpointDriver], None], services: Services) -> None:
    from faregate_adapter_openai import (
        alpha_search,
        audio,
        dashboard,
        endpoints,
        images,
        not_implemented,
        realtime,
    )
    from faregate_adapter_openai.completions import CompletionsDriver
    from faregate_adapter_openai.rerank import RerankDriver
    from faregate_adapter_openai.responses_api.compact import CompactDriver
    from faregate_adapter_openai.responses_api.driver import ResponsesDriver

    for driver in endpoints.drivers():
        register(driver)
    register(not_implemented.NotImplementedDriver())
    for image_driver in images.drivers():
        register(image_driver)
    register(alpha_search.driver())
    for audio_driver in audio.drivers():
        register(audio_driver)
    register(CompletionsDriver())
    register(RerankDriver())
    register(ResponsesDriver())
    register(CompactDriver())
    for billing in dashboard.drivers(services):
        register(billing)
    register(realtime.RealtimeDriver(services))


@hookimpl
def register_pricers(register: Callable[[Pricer], None], services: Services) -> None:
    from faregate_adapter_openai.responses_api.compact import CompactPricer

    register(CompactPricer(services))  # the *-openai-compact wildcard prices of /v1/responses/compact
