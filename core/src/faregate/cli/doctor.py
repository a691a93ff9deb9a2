"""``faregate doctor``: check that this configuration can serve (settings, plugins, data
directory, database and migrations, Redis, channels whose type no plugin serves). A
driver's error is told as its class and message with credentials masked: drivers put
their connection parameters (a DSN, a password) in their messages."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import TYPE_CHECKING

import click

from faregate.cli.runtime import load_gateway, run_async
from faregate.observe.causes import describe_failure, scrub, url_secrets

if TYPE_CHECKING:
    from faregate.gateway import Gateway

OK, WARN, FAIL = "ok", "warn", "FAIL"


@click.command()
def doctor() -> None:
    """Check settings, plugins, data directory, database, Redis; exit 1 if anything fails."""
    from faregate.plugins import unknown_plugin_names

    results: list[tuple[str, str, str]] = []
    gateway = load_gateway(check_plugin_names=False)  # a bad setting stops here with its one line
    results.append((OK, "settings", "every setting is valid"))
    for problem in unknown_plugin_names(gateway.settings):  # `serve` refuses to start with these
        results.append((FAIL, "plugin names", problem))
    for report in gateway.plugins.errors:
        results.append((FAIL, f"plugin {report.name}", scrub(report.error or "failed to load")))
    if not gateway.plugins.errors:
        loaded = [r.name for r in gateway.plugins.reports if not r.builtin]
        results.append((OK, "plugins", ", ".join(loaded) or "no plugins beyond the built-in ones"))
    if not gateway.formats:
        results.append((WARN, "formats", "no adapter plugin serves a client format: nothing can be relayed"))
    results.append(_data_dir(gateway.settings.data_dir))
    results.extend(run_async(_services(gateway)))
    worst = OK
    for level, name, detail in results:
        colour = {"ok": "green", "warn": "yellow", "FAIL": "red"}[level]
        click.echo(f"{click.style(f'{level:>4}', fg=colour)}  {name}: {detail}")
        if level == FAIL or (level == WARN and worst == OK):
            worst = level
    if worst == FAIL:
        raise SystemExit(1)


def _data_dir(path: str) -> tuple[str, str, str]:
    from faregate.security.files import open_to_others

    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path):
            pass
    except OSError as exc:
        return FAIL, "data dir", f"{path} is not writable: {exc.strerror or exc}"
    found = open_to_others(path)
    if found:
        return WARN, "data dir", f"{os.path.abspath(path)} is writable; {found}"
    return OK, "data dir", f"{os.path.abspath(path)} is writable"


async def _services(gateway: Gateway) -> list[tuple[str, str, str]]:
    from faregate.db import models as m
    from faregate.db import storage

    results: list[tuple[str, str, str]] = []
    try:
        await storage.open_storage(gateway.db_config)
        from tortoise import connections

        await connections.get("default").execute_query("SELECT 1")  # connections open lazily
    except Exception as exc:  # noqa: BLE001 - reported, whatever the driver raises
        cause = describe_failure(exc, url_secrets(gateway.db_url))
        results.append((FAIL, "database", f"{gateway.backend.name} unreachable: {cause}"))
        with contextlib.suppress(Exception):
            await storage.close_storage()
    else:
        try:
            results.append((OK, "database", f"{gateway.backend.name} answers"))
            try:
                applied = set(await storage.applied_migrations())
            except Exception:  # noqa: BLE001 - no migration table yet
                applied = set()
            pending = [name for name in storage.shipped_migrations() if name not in applied]
            if pending:
                results.append((FAIL, "migrations", f"{len(pending)} pending ({pending[0]} …): run `faregate migrate`"))
            else:
                results.append((OK, "migrations", "all applied"))
                types = {int(row["type"]) for row in await m.Channel.filter(status=m.CHANNEL_ENABLED).values("type")}
                orphans = sorted(t for t in types if t not in gateway.providers)
                if orphans:
                    results.append((WARN, "channels", f"enabled channels of type(s) {orphans} have no provider plugin "
                                    f"(installed types: {sorted(gateway.providers)})"))
        finally:
            await storage.close_storage()
    results.append(await _redis(gateway.settings.redis_url))
    return results


async def _redis(url: str) -> tuple[str, str, str]:
    if not url:
        return OK, "redis", "not configured (one host: changes travel through the data dir's epoch file)"
    import redis.asyncio as aioredis

    try:
        client = aioredis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
    except ValueError as exc:  # a URL redis-py cannot read (scheme, port)
        return FAIL, "redis", f"bad URL: {describe_failure(exc, url_secrets(url))}"
    try:
        await client.ping()
    except Exception as exc:  # noqa: BLE001 - reported
        return FAIL, "redis", f"unreachable: {describe_failure(exc, url_secrets(url))}"
    finally:
        await client.aclose()
    return OK, "redis", "answers"
