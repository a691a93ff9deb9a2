"""Faregate plugin: the Anthropic Messages format and the Anthropic channel type.

The hooks import what they register: every command loads the plugins, and most (``faregate
config show``, ``doctor``) never build a format or a provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import InboundFormat, Provider


@hookimpl
def register_formats(register: Callable[[InboundFormat], None]) -> None:
    from faregate_adapter_anthropic.format import AnthropicMessagesFormat

    register(AnthropicMessagesFormat())


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    from faregate_adapter_anthropic.provider import AnthropicProvider

    register(AnthropicProvider())
