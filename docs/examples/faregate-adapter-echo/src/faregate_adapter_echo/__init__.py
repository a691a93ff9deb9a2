"""Example Faregate plugin: the ``echo`` channel type (9001). The entry point in
``pyproject.toml`` names this module; its ``@hookimpl`` runs once at start.

The hook imports what it registers: every ``faregate`` command loads the installed plugins,
and most (``config show``, ``doctor``) never build a provider, so a plugin's entry module
imports little more than ``hookimpl`` (``faregate.api`` imports each name on first use)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import Provider

__version__ = "0.1.0"


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    from faregate_adapter_echo.provider import EchoProvider

    register(EchoProvider())
