"""Settings: declared by the core (:mod:`.declared`) and by plugins (``register_settings``),
resolved once at start (:mod:`.resolve`).

The declarations and the resolver need pydantic, which costs a CLI command a good part of
its start: they are imported on first use of their names (PEP 562), and the names every
command needs first come from :mod:`.command_line`, which needs nothing."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from faregate.settings.command_line import ENV_PREFIX, SettingError, set_from_command_line

if TYPE_CHECKING:
    from faregate.settings.declared import CORE_SETTINGS, Setting
    from faregate.settings.resolve import MASK, Settings

#: the names imported on first use, by the module that has them
_LAZY = {"CORE_SETTINGS": "declared", "Setting": "declared", "MASK": "resolve", "Settings": "resolve"}

__all__ = ["CORE_SETTINGS", "ENV_PREFIX", "MASK", "Setting", "SettingError", "Settings", "set_from_command_line"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
