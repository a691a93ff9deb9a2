"""Example Faregate plugin: the ``echo`` channel type (9001). The entry point in
``pyproject.toml`` names this module; its ``@hookimpl`` runs once at start."""

from collections.abc import Callable

from faregate.api import Provider, hookimpl
from faregate_adapter_echo.provider import ECHO_CHANNEL_TYPE, EchoProvider, EchoStreamParser

__all__ = ["ECHO_CHANNEL_TYPE", "EchoProvider", "EchoStreamParser"]
__version__ = "0.1.0"


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(EchoProvider())
