"""Faregate: an open LLM API gateway. Plugins use :data:`hookimpl`."""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("faregate")

__all__ = ["hookimpl", "__version__"]
