"""The ``faregate`` command (click): serve, migrate, config, admin, plugins, doctor, dev,
import. A bad setting stops any command with one line on stderr and exit code 2."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tomllib
from typing import Any

import click

from faregate import __version__
from faregate.cli.admin import admin
from faregate.cli.config import config
from faregate.cli.dev import dev
from faregate.cli.doctor import doctor
from faregate.cli.importing import import_group
from faregate.cli.plugins import plugins
from faregate.cli.serve import migrate, serve
from faregate.settings import ENV_PREFIX, SettingError, set_from_command_line


class _Root(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SettingError as err:
            click.echo(setting_error_line(str(err)), err=True)
            sys.exit(2)


def _log_format() -> str:
    """The log format asked for (flag, environment, config file), read without resolving
    the settings: one of them is what failed."""
    value = os.environ.get(ENV_PREFIX + "LOG_FORMAT")
    config = os.environ.get(ENV_PREFIX + "CONFIG")
    if not value and config:
        with contextlib.suppress(OSError, ValueError):
            with open(config, "rb") as file:
                value = tomllib.load(file).get("log_format")
    return str(value or "text").strip().lower()


def setting_error_line(message: str) -> str:
    """The one line a bad setting stops a command with: ``faregate: …``, or in JSON log
    mode (``FAREGATE_LOG_FORMAT=json``) one JSON object, as every line the process writes."""
    if _log_format() != "json":
        return f"faregate: {message}"
    from faregate.observe.logs import formatter

    record = logging.LogRecord("faregate", logging.ERROR, __file__, 0, message, None, None)
    record.event = "setting_error"
    return formatter("json").format(record)


def _use_config(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:  # read by every settings resolution, in every process
        set_from_command_line(ENV_PREFIX + "CONFIG", value, "--config")


@click.group(cls=_Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="faregate", message="%(prog)s %(version)s")
@click.option("--config", type=click.Path(dir_okay=False), expose_value=False, callback=_use_config,
              is_eager=True, help="TOML settings file [FAREGATE_CONFIG]; the environment and flags override it.")
def cli() -> None:
    """Faregate: an open LLM API gateway."""


for command in (serve, migrate, config, admin, plugins, doctor, dev, import_group):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="faregate")


if __name__ == "__main__":  # pragma: no cover
    main()
