"""Faregate plugin: the OpenAI format (chat completions, embeddings, moderations, and
new-api's 501s for the paths it does not serve) and the OpenAI channel type."""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import EndpointDriver, InboundFormat, Provider, hookimpl
from faregate_adapter_openai import dashboard, endpoints, not_implemented
from faregate_adapter_openai.format import OpenAIChatFormat
from faregate_adapter_openai.provider import OpenAICompatibleProvider, OpenAIProvider

__all__ = ["OpenAIChatFormat", "OpenAICompatibleProvider", "OpenAIProvider"]


@hookimpl
def register_formats(register: Callable[[InboundFormat], None]) -> None:
    register(OpenAIChatFormat())


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(OpenAIProvider())


@hookimpl
def register_endpoint_drivers(register: Callable[[EndpointDriver], None]) -> None:
    for driver in endpoints.drivers():
        register(driver)
    register(not_implemented.NotImplementedDriver())
    for billing in dashboard.drivers():
        register(billing)
