"""``faregate plugins list``: what is installed, what this configuration loads, and what
failed to load and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from faregate import jsonutil

if TYPE_CHECKING:
    from faregate.settings import Settings


@click.group()
def plugins() -> None:
    """Inspect the plugin set."""


@plugins.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array of {name, version, state, reason, hooks}.")
def list_plugins(as_json: bool) -> None:
    """Installed plugins: enabled, disabled (by FAREGATE_PLUGINS / FAREGATE_DISABLED_PLUGINS) or broken."""
    from faregate.plugins import DEFAULT_PLUGINS, installed_entry_points, load_plugins
    from faregate.settings import CORE_SETTINGS, Settings

    settings = Settings(CORE_SETTINGS)  # as load_plugins reads them
    loaded = {report.name: report for report in load_plugins().reports}
    rows: list[dict[str, object]] = []
    for ep, dist, version in sorted(installed_entry_points(), key=lambda t: t[0].name):
        report = loaded.get(ep.name)
        hooks: list[str]
        if report is None:
            state, reason, hooks = "disabled", _left_out_by(settings, ep.name), []
        elif report.error:
            state, reason, hooks = "broken", report.error, []
        else:
            state, reason, hooks = "enabled", "", report.hooks
        rows.append({"name": ep.name, "distribution": dist, "version": version, "state": state,
                     "reason": reason, "hooks": hooks})
    for report in loaded.values():
        if report.builtin:
            rows.append({"name": report.name, "distribution": "faregate", "version": None, "state": "builtin",
                         "reason": "", "hooks": report.hooks})
    for module_name in DEFAULT_PLUGINS:  # a core default blocked by its short name
        if module_name not in loaded:
            rows.append({"name": module_name, "distribution": "faregate", "version": None, "state": "disabled",
                         "reason": _left_out_by(settings, module_name.rsplit(".", 1)[1]), "hooks": []})
    if as_json:
        click.echo(jsonutil.dumps(rows).decode())
        return
    for row in rows:
        line = f"{row['name']:<42} {row['version'] or '':<10} {row['state']:<9}"
        if row["reason"]:
            line += f" {row['reason']}"
        elif row["hooks"]:
            line += f" hooks: {', '.join(row['hooks'])}"  # type: ignore[arg-type]
        click.echo(line)


def _setting_named(settings: Settings, name: str) -> str:
    """How the operator set ``name``: its variable, or where else it came from."""
    origin = settings.origin(name)
    if origin.startswith("env "):
        return origin.removeprefix("env ")
    return f"{name} ({origin})"


def _left_out_by(settings: Settings, name: str) -> str:
    """Which setting kept plugin ``name`` from loading."""
    if name in settings.disabled_plugins:
        return f"blocked by {_setting_named(settings, 'disabled_plugins')}"
    if settings.plugins and name not in settings.plugins:
        return f"not in the allow list {_setting_named(settings, 'plugins')}"
    return "another installed distribution declares a plugin of this name (the first one found is loaded)"
