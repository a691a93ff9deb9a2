"""Finding and loading plugins: entry points in the group ``faregate``.

Each entry point loads inside its own guard, so a plugin that fails to import is
reported (log + ``GET /api/plugins``) and the service still starts. The core's own
defaults are ordinary plugins registered after the external ones, all ``trylast``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from faregate import hookspecs

log = logging.getLogger("faregate.plugins")

GROUP = "faregate"

#: internal modules registered as plugins after the external ones
DEFAULT_PLUGINS = (
    "faregate.default_plugins.storage_sqlite",
    "faregate.default_plugins.endpoints",
    "faregate.default_plugins.api_keys",
    "faregate.default_plugins.management_auth",
    "faregate.default_plugins.selection",
    "faregate.default_plugins.pricing",
)


@dataclass
class PluginReport:
    name: str
    version: str | None
    hooks: list[str] = field(default_factory=list)
    error: str | None = None
    builtin: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "hooks": self.hooks,
            "error": self.error,
            "builtin": self.builtin,
        }


@dataclass
class PluginSet:
    pm: pluggy.PluginManager
    reports: list[PluginReport]

    @property
    def errors(self) -> list[PluginReport]:
        return [r for r in self.reports if r.error]


def installed_entry_points() -> Iterable[tuple[importlib.metadata.EntryPoint, str, str]]:
    seen: set[tuple[str, str]] = set()
    for dist in importlib.metadata.distributions():
        dist_name = dist.metadata["Name"]
        for ep in dist.entry_points:
            if ep.group != GROUP:
                continue
            key = (dist_name.lower(), ep.name)
            if key in seen:  # the same dist found twice on sys.path (lib64 → lib)
                continue
            seen.add(key)
            yield ep, dist_name, dist.version


def load_plugins(
    *,
    allow: list[str] | None = None,
    block: list[str] | None = None,
    load_entrypoints: bool = True,
    extra: Iterable[Any] = (),
) -> PluginSet:
    """Build a plugin manager.

    :param allow: entry-point names to load (``FAREGATE_PLUGINS``); None = all.
    :param block: entry-point names never to load (``FAREGATE_DISABLED_PLUGINS``).
    :param extra: plugin objects/modules to register too (tests, embedding).
    """
    if allow is None or block is None:
        from faregate.settings import CORE_SETTINGS, Settings

        chosen = Settings(CORE_SETTINGS)  # environment and config file, as the gateway will see them
        if allow is None:
            allow = list(chosen.plugins) or None
        if block is None:
            block = list(chosen.disabled_plugins)
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    reports: list[PluginReport] = []
    if load_entrypoints:
        for ep, dist_name, version in sorted(installed_entry_points(), key=lambda t: t[0].name):
            if ep.name in block or (allow is not None and ep.name not in allow):
                continue
            if pm.has_plugin(ep.name):
                log.warning("plugin name %r declared twice; keeping the first (%s)", ep.name, dist_name)
                continue
            report = PluginReport(name=ep.name, version=version)
            reports.append(report)
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except Exception as exc:  # noqa: BLE001 - one broken plugin must not stop the service
                if os.environ.get("FAREGATE_STRICT_PLUGINS") == "1":
                    raise
                report.error = f"{type(exc).__name__}: {exc}"
                log.error("plugin %s failed to load: %s", ep.name, report.error)
                if pm.has_plugin(ep.name):
                    pm.unregister(name=ep.name)
    for i, plugin in enumerate(extra):
        name = getattr(plugin, "__name__", None) or f"extra-{i}"
        reports.append(PluginReport(name=name, version=None))
        pm.register(plugin, name=name)
    for module_name in DEFAULT_PLUGINS:
        short = module_name.rsplit(".", 1)[1]
        if short in block:
            continue
        pm.register(importlib.import_module(module_name), name=module_name)
        reports.append(PluginReport(name=module_name, version=None, builtin=True))
    while True:
        try:
            pm.check_pending()
            break
        except pluggy.PluginValidationError as exc:
            # a hookimpl with no spec (a typo): report the plugin, drop it, keep serving
            bad = exc.plugin
            name = pm.get_name(bad)
            for report in reports:
                if report.name == name:
                    report.error = f"unknown hook: {exc}"
            log.error("plugin %s uses an unknown hook: %s", name, exc)
            pm.unregister(bad)
    for report in reports:
        plugin = pm.get_plugin(report.name)
        if plugin is not None:
            report.hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or [])
    if os.environ.get("FAREGATE_TRACE_PLUGINS") == "1":
        pm.trace.root.setwriter(lambda msg: log.info("%s", msg.rstrip()))
        pm.enable_tracing()
    return PluginSet(pm=pm, reports=reports)
