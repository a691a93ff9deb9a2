"""Faregate plugin: the Anthropic Messages format and the Anthropic channel type."""

from __future__ import annotations

from faregate import hookimpl
from faregate_adapter_anthropic.format import AnthropicMessagesFormat
from faregate_adapter_anthropic.provider import AnthropicProvider

__all__ = ["AnthropicMessagesFormat", "AnthropicProvider"]


@hookimpl
def register_formats(register):
    register(AnthropicMessagesFormat())


@hookimpl
def register_providers(register):
    register(AnthropicProvider())


@hookimpl
def register_routes(register):
    from faregate_adapter_anthropic.routes import make_blueprint  # imports Quart only when serving

    register(make_blueprint())
