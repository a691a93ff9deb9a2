"""Faregate plugin: the Dify channel type (new-api's 37), Dify apps behind the chat formats."""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import Provider, hookimpl
from faregate_adapter_dify.provider import DIFY_CHANNEL_TYPE, DifyProvider

__all__ = ["DIFY_CHANNEL_TYPE", "DifyProvider"]


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(DifyProvider())
