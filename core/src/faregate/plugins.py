"""Finding and loading plugins: entry points in the group ``faregate``.

Each entry point loads inside its own guard, so a plugin that fails to import is
reported (log + ``GET /api/plugins``) and the service still starts. The core's own
defaults are ordinary plugins registered after the external ones, all ``trylast``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pluggy

from faregate import hookspecs

if TYPE_CHECKING:
    from faregate.settings import Settings

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


#: an installed entry point of ours, the name of its distribution and its version
EntryPointOf = tuple[importlib.metadata.EntryPoint, str, str]


def installed_entry_points() -> Iterable[EntryPointOf]:
    """Faregate's entry points of the installed distributions, each ``(entry point, dist name,
    version)``; the scan of every distribution is kept until ``sys.path`` or one of its
    directories changes (an install adds or removes a ``.dist-info`` directory)."""
    return _scan_entry_points(_path_state())


def _path_state() -> tuple[tuple[str, int], ...]:
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            state.append((entry, -1))
    return tuple(state)


@functools.lru_cache(maxsize=2)
def _scan_entry_points(path_state: tuple[tuple[str, int], ...]) -> tuple[EntryPointOf, ...]:
    found: list[EntryPointOf] = []
    seen: set[tuple[str, str]] = set()
    for dist in importlib.metadata.distributions():
        ours = [ep for ep in dist.entry_points if ep.group == GROUP]
        if not ours:  # most distributions: their metadata (a whole METADATA file parsed) is not read
            continue
        dist_name = dist.metadata["Name"]
        for ep in ours:
            key = (dist_name.lower(), ep.name)
            if key in seen:  # the same dist found twice on sys.path (lib64 → lib)
                continue
            seen.add(key)
            found.append((ep, dist_name, dist.version))
    return tuple(found)


def unknown_names(settings: Settings, lists: Iterable[str] = ("plugins", "disabled_plugins")) -> dict[str, list[str]]:
    """The names ``FAREGATE_PLUGINS`` / ``FAREGATE_DISABLED_PLUGINS`` (``lists``) give that no
    installed plugin has, by setting (the block list may also name the core's own defaults)."""
    installed = {ep.name for ep, _, _ in installed_entry_points()}
    core = {name.rsplit(".", 1)[1] for name in DEFAULT_PLUGINS}
    found = {}
    for setting in lists:
        known = installed if setting == "plugins" else installed | core
        unknown = [name for name in settings.get(setting) if name not in known]
        if unknown:
            found[setting] = unknown
    return found


def unknown_plugin_names(settings: Settings, lists: Iterable[str] = ("plugins", "disabled_plugins")) -> list[str]:
    """What is wrong with ``FAREGATE_PLUGINS`` / ``FAREGATE_DISABLED_PLUGINS``: one sentence
    per list that names a plugin nobody installed (a typo would otherwise load every plugin
    but the intended one, or block nothing), naming the installed ones."""
    installed = ", ".join(sorted({ep.name for ep, _, _ in installed_entry_points()})) or "none"
    core = ", ".join(name.rsplit(".", 1)[1] for name in DEFAULT_PLUGINS)
    problems = []
    for setting, unknown in unknown_names(settings, lists).items():
        names = ", ".join(repr(name) for name in unknown)
        also = f"; the core's own: {core}" if setting == "disabled_plugins" else ""
        problems.append(f"{settings.named(setting)} names {names}, which no installed plugin is "
                        f"(installed: {installed}{also}; `faregate plugins list` shows them)")
    return problems


def load_plugins(
    *,
    allow: list[str] | None = None,
    block: list[str] | None = None,
    load_entrypoints: bool = True,
    extra: Iterable[Any] = (),
    check_names: bool = True,
) -> PluginSet:
    """Build a plugin manager.

    :param allow: entry-point names to load (``FAREGATE_PLUGINS``); None = all.
    :param block: entry-point names never to load (``FAREGATE_DISABLED_PLUGINS``).
    :param extra: plugin objects/modules to register too (tests, embedding).
    :param check_names: lists read from the settings must name installed plugins, else
        :class:`faregate.settings.SettingError` (see :func:`unknown_plugin_names`).
    """
    if allow is None or block is None:
        from faregate.settings import CORE_SETTINGS, SettingError, Settings

        chosen = Settings(CORE_SETTINGS)  # environment and config file, as the gateway will see them
        read = [name for name, given in (("plugins", allow), ("disabled_plugins", block)) if given is None]
        problems = unknown_plugin_names(chosen, read) if check_names and load_entrypoints else []
        if problems:
            raise SettingError(problems[0])
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
