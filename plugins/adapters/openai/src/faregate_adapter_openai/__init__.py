"""Faregate plugin: the OpenAI format (chat completions, embeddings, moderations, the
Realtime API's WebSocket, and new-api's 501s for the paths it does not serve) and the
channel types that speak it: OpenAI and its compatible vendors (:mod:`.presets`), Azure
OpenAI, Jina, Codex."""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import EndpointDriver, InboundFormat, OptionSpec, Pricer, Provider, Services, Setting, hookimpl
from faregate_adapter_openai import (
    alpha_search,
    audio,
    dashboard,
    endpoints,
    image_jobs,
    images,
    not_implemented,
    realtime,
)
from faregate_adapter_openai.azure import AzureOpenAIProvider
from faregate_adapter_openai.codex import CodexProvider
from faregate_adapter_openai.completions import CompletionsDriver
from faregate_adapter_openai.format import OpenAIChatFormat
from faregate_adapter_openai.jina import JinaProvider
from faregate_adapter_openai.provider import OpenAICompatibleProvider, OpenAIProvider
from faregate_adapter_openai.rerank import RerankDriver
from faregate_adapter_openai.responses_api.compact import CompactDriver, CompactPricer
from faregate_adapter_openai.responses_api.driver import ResponsesDriver
from faregate_adapter_openai.responses_api.format import OpenAIResponsesFormat

__all__ = ["AzureOpenAIProvider", "OpenAIChatFormat", "OpenAICompatibleProvider", "OpenAIProvider"]


@hookimpl
def register_formats(register: Callable[[InboundFormat], None]) -> None:
    register(OpenAIChatFormat())
    register(OpenAIResponsesFormat())


@hookimpl
def register_providers(register: Callable[[Provider], None], services: Services) -> None:
    register(OpenAIProvider(services))
    register(AzureOpenAIProvider())
    register(CodexProvider())
    register(JinaProvider())


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    for setting in (*realtime.SETTINGS, *image_jobs.SETTINGS):
        register(setting)


@hookimpl
def register_endpoint_drivers(register: Callable[[EndpointDriver], None], services: Services) -> None:
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
    register(CompactPricer(services))  # the *-openai-compact wildcard prices of /v1/responses/compact
