"""Faregate plugin: Gemini's native format (generateContent, streamGenerateContent,
embedContent, batchEmbedContents, countTokens, the model lists) and the Gemini channel
type (new-api type 24). The hooks import what they register: loading the plugin (every
command does) stays light."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import EndpointDriver, InboundFormat, Provider


@hookimpl
def register_formats(register: Callable[[InboundFormat], None]) -> None:
    from faregate_adapter_gemini.format import GeminiFormat

    register(GeminiFormat())


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    from faregate_adapter_gemini.provider import GeminiProvider

    register(GeminiProvider())


@hookimpl
def register_endpoint_drivers(register: Callable[[EndpointDriver], None]) -> None:
    from faregate_adapter_gemini.driver import GenerateDriver, UnservedDriver
    from faregate_adapter_gemini.embeddings import EmbedDriver

    register(GenerateDriver())
    register(EmbedDriver())
    register(UnservedDriver())
