"""``faregate config show``: the effective settings, secrets masked, and where each came from."""

from __future__ import annotations

import click

from faregate import jsonutil
from faregate.cli.runtime import load_settings


@click.group()
def config() -> None:
    """Inspect the settings."""


@config.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object: name → {value, origin, env}.")
def show(as_json: bool) -> None:
    """Print the effective settings (the core's and the plugins'), secrets masked."""
    settings = load_settings()
    values = settings.masked()
    if as_json:
        doc = {s.name: {"value": values[s.name], "origin": settings.origin(s.name), "env": s.env}
               for s in settings.declared()}
        click.echo(jsonutil.dumps(doc).decode())
        return
    width = max(len(s.name) for s in settings.declared())
    for setting in settings.declared():
        value = values[setting.name]
        shown = ",".join(value) if isinstance(value, tuple) else value
        click.echo(f"{setting.name:<{width}}  {shown!s:<24}  ({settings.origin(setting.name)})")


@config.command()
@click.option("--all", "everything", is_flag=True, help="The installed plugins' settings too.")
def table(everything: bool) -> None:
    """Print the settings table of docs/settings.md (Markdown), from the declarations."""
    from faregate.settings import CORE_SETTINGS
    from faregate.settings.table import markdown_table

    declared = load_settings().declared() if everything else list(CORE_SETTINGS)
    click.echo(markdown_table(declared), nl=False)
