"""``faregate import new-api --from DSN``: switching from new-api (or one-api) keeping
users, keys, channels and history (see docs/switching-from-new-api.md)."""

from __future__ import annotations

import contextlib
import json

import click

from faregate.cli.runtime import announce, load_gateway, open_database, run_async

import_group = click.Group("import", help="Bring in another gateway's data.")


@import_group.command("new-api")
@click.option("--from", "dsn", required=True, metavar="DSN",
              help="new-api's database: sqlite:///path/one-api.db (or the path), mysql://user:pass@host/db "
                   "(or new-api's SQL_DSN as written: user:pass@tcp(host:3306)/db), postgres://…")
@click.option("--logs-from", "logs_dsn", metavar="DSN",
              help="new-api's LOG_SQL_DSN, when its logs live in a database of their own.")
@click.option("--dry-run", is_flag=True, help="Read everything and print the counts; write nothing.")
@click.option("--schema", type=click.Choice(["auto", "new-api", "one-api"]), default="auto", show_default=True,
              help="Whose database the source is; auto tells one-api's from new-api's by its tables and columns.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def import_newapi(dsn: str, logs_dsn: str | None, dry_run: bool, schema: str, as_json: bool) -> None:
    """Import users (passwords kept), keys (the same sk- keys keep working), channels with
    their keys, abilities, options, redemption codes, top-ups and logs, keeping ids.
    Rows already here are left as they are: running it twice changes nothing."""
    from faregate.importing.rows import Rejected
    from faregate.importing.run import import_newapi as run_import
    from faregate.importing.source import SourceError, open_source, source_url

    async def run() -> None:
        gateway = load_gateway()
        try:
            url = source_url(dsn)
            logs_url = source_url(logs_dsn) if logs_dsn else None
        except SourceError as exc:
            raise click.ClickException(str(exc)) from None
        # a dry run writes nothing, not even the schema: an unmigrated target reads as empty
        async with open_database(gateway, migrate=not dry_run):
            try:
                async with contextlib.AsyncExitStack() as stack:
                    source = await stack.enter_async_context(open_source(url, gateway.storage_backends))
                    logs = (await stack.enter_async_context(open_source(logs_url, gateway.storage_backends))
                            if logs_url else None)
                    report = await run_import(gateway, source, dry_run=dry_run, logs=logs, schema=schema)
            except (SourceError, Rejected) as exc:
                raise click.ClickException(str(exc)) from None
            if not dry_run:  # running gateways reload everything
                report.notes.extend(await announce(gateway, "all"))
        if as_json:
            click.echo(json.dumps(report.as_dict(), indent=2))
        else:
            for line in report.lines():
                click.echo(line)

    run_async(run())
