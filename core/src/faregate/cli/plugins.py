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
    """Installed plugins: enabled, disabled (by FAREGATE_PLUGINS / FAREGATE_DISABLED_PLUGINS) or broken;
    a name those settings give that no installed plugin has is listed as unknown (exit code 1: the
    gateway refuses to start with it)."""
    from faregate.plugins import DEFAULT_PLUGINS, installed_entry_points, load_plugins, unknown_names
    from faregate.settings import CORE_SETTINGS, Settings

    settings = Settings(CORE_SETTINGS)  # as load_plugins reads them
    loaded = {report.name: report for report in load_plugins(check_names=False).reports}
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
    unknown = unknown_names(settings)
    for setting, names in unknown.items():
        rows.extend({"name": name, "distribution": None, "version": None, "state": "unknown",
                     "reason": f"named in {settings.named(setting)}, but no installed plugin has this name",
                     "hooks": []} for name in names)
    if as_json:
        click.echo(jsonutil.dumps(rows).decode())
    else:
        _print(rows)
    if unknown:  # `faregate serve` refuses to start with it
        raise SystemExit(1)


def _print(rows: list[dict[str, object]]) -> None:
    for row in rows:
        line = f"{row['name']:<42} {row['version'] or '':<10} {row['state']:<9}"
        if row["reason"]:
            line += f" {row['reason']}"
        elif row["hooks"]:
            line += f" hooks: {', '.join(row['hooks'])}"  # type: ignore[arg-type]
        click.echo(line)


def _left_out_by(settings: Settings, name: str) -> str:
    """Which setting kept plugin ``name`` from loading."""
    if name in settings.disabled_plugins:
        return f"blocked by {settings.named('disabled_plugins')}"
    if settings.plugins and name not in settings.plugins:
        return f"not in the allow list {settings.named('plugins')}"
    return "another installed distribution declares a plugin of this name (the first one found is loaded)"
