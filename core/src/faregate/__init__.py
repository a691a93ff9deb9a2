"""Faregate: an open LLM API gateway. Plugins use :data:`hookimpl`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pluggy

    hookimpl: pluggy.HookimplMarker

__version__ = "0.1.0"

__all__ = ["hookimpl", "__version__"]


def __getattr__(name: str) -> Any:
    """:data:`hookimpl` made on first use (PEP 562): importing pluggy costs every CLI command,
    ``faregate --version`` too, and most never load a plugin."""
    if name != "hookimpl":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import pluggy

    marker = globals()["hookimpl"] = pluggy.HookimplMarker("faregate")
    return marker
