"""Faregate plugin: the Dify channel type (new-api's 37), Dify apps behind the chat formats.
The hook imports the provider: loading the plugin (every command does) stays light."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import Provider


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    from faregate_adapter_dify.provider import DifyProvider

    register(DifyProvider())
