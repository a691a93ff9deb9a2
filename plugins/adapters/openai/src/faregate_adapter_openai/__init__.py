"""Faregate plugin: the OpenAI Chat Completions format and channel type."""

from __future__ import annotations

from faregate import hookimpl
from faregate_adapter_openai.format import OpenAIChatFormat
from faregate_adapter_openai.provider import OpenAIProvider

__all__ = ["OpenAIChatFormat", "OpenAIProvider"]


@hookimpl
def register_formats(register):
    register(OpenAIChatFormat())


@hookimpl
def register_providers(register):
    register(OpenAIProvider())
