"""Faregate plugin: the Replicate channel type (new-api's 56), image generation. The hook imports the provider:
loading the plugin (every command does) stays light."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import Provider


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    from faregate_adapter_replicate.provider import ReplicateProvider

    register(ReplicateProvider())
