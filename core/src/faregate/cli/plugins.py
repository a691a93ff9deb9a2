"""``faregate plugins list``: what is installed, what this configuration loads, and what
failed to load and why."""

from __future__ import annotations

import click

from faregate import jsonutil


@click.group()
def plugins() -> None:
    """Inspect the plugin set."""


@plugins.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array of {name, version, state, reason, hooks}.")
def list_plugins(as_json: bool) -> None:
    """Installed plugins: enabled, disabled (by FAREGATE_PLUGINS / FAREGATE_DISABLED_PLUGINS) or broken."""
    from faregate.plugins import installed_entry_points, load_plugins

    loaded = {report.name: report for report in load_plugins().reports}
    rows: list[dict[str, object]] = []
    for ep, dist, version in sorted(installed_entry_points(), key=lambda t: t[0].name):
        report = loaded.get(ep.name)
        hooks: list[str]
        if report is None:
            state, reason, hooks = "disabled", "left out by FAREGATE_PLUGINS / FAREGATE_DISABLED_PLUGINS", []
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
