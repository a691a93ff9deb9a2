"""Faregate plugin: the Anthropic Messages format and the Anthropic channel type."""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import InboundFormat, Provider, hookimpl
from faregate_adapter_anthropic.format import AnthropicMessagesFormat
from faregate_adapter_anthropic.provider import AnthropicProvider

__all__ = ["AnthropicMessagesFormat", "AnthropicProvider"]


@hookimpl
def register_formats(register: Callable[[InboundFormat], None]) -> None:
    register(AnthropicMessagesFormat())


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(AnthropicProvider())
