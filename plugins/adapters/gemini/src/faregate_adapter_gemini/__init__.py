"""Faregate plugin: Gemini's native format (generateContent, streamGenerateContent,
embedContent, batchEmbedContents, countTokens, the model lists) and the Gemini channel
type (new-api type 24)."""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import EndpointDriver, InboundFormat, Provider, hookimpl
from faregate_adapter_gemini.driver import GenerateDriver, UnservedDriver
from faregate_adapter_gemini.embeddings import EmbedDriver
from faregate_adapter_gemini.format import GeminiFormat
from faregate_adapter_gemini.provider import GeminiProvider

__all__ = ["GeminiFormat", "GeminiProvider"]


@hookimpl
def register_formats(register: Callable[[InboundFormat], None]) -> None:
    register(GeminiFormat())


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(GeminiProvider())


@hookimpl
def register_endpoint_drivers(register: Callable[[EndpointDriver], None]) -> None:
    register(GenerateDriver())
    register(EmbedDriver())
    register(UnservedDriver())
