"""Checking a plugin the way the core loads it: through its entry point, with a real
gateway's ``services``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from faregate.gateway import Gateway
from faregate.plugins import PluginReport, load_plugins


def installed(name: str) -> PluginReport:
    """The load report of the installed plugin ``name`` (entry-point name), loaded alone."""
    plugins = load_plugins(allow=[name])
    (report,) = [r for r in plugins.reports if r.name == name]
    return report


def registered(name: str, hook: str, data_dir: Path) -> list[Any]:
    """Everything the installed plugin ``name`` registers through ``hook``, with the
    ``services`` of a gateway built on ``data_dir`` where the hook offers them."""
    plugins = load_plugins(allow=[name])
    found: list[Any] = []
    caller = getattr(plugins.pm.hook, hook)
    kwargs: dict[str, Any] = {}
    if "services" in caller.spec.argnames:
        kwargs["services"] = Gateway(plugins, {"data_dir": str(data_dir)}).services
    caller(register=lambda obj, *args, **kw: found.append(obj), **kwargs)
    return found
