"""Example Faregate plugin: the ``echo`` channel type (9001).

Faregate imports this module through the entry point in ``pyproject.toml`` and
registers it as a plugin; the ``@hookimpl`` functions below run once at start and
hand the core the objects it calls per request.
"""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import (
    Provider,
    hookimpl,
)
from faregate_adapter_echo.provider import ECHO_CHANNEL_TYPE, EchoProvider, EchoStreamParser

__all__ = ["ECHO_CHANNEL_TYPE", "EchoProvider", "EchoStreamParser"]
__version__ = "0.1.0"


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(EchoProvider())
