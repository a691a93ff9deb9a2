"""``faregate doctor``: check that this configuration can serve (settings, plugins, data
directory, database and migrations, Redis, channels whose type no plugin serves). A
driver's error is told as its class and message with credentials masked: drivers put
their connection parameters (a DSN, a password) in their messages.

It builds no gateway: the plugins' settings, storage engines and tables are what it needs to
reach the database, so a check costs the database driver's imports, not the relay's. Only
enabled channels make it build one, for the channel types its providers serve."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import TYPE_CHECKING

import click

from faregate.cli.runtime import run_async
from faregate.observe.causes import describe_failure, scrub, url_secrets

if TYPE_CHECKING:
    from faregate.db.backend import DbModels
    from faregate.hooks import GatewayHooks
    from faregate.plugins import PluginSet
    from faregate.settings import Settings

OK, WARN, FAIL = "ok", "warn", "FAIL"


@click.command()
def doctor() -> None:
    """Check settings, plugins, data directory, database, Redis; exit 1 if anything fails."""
    from faregate.hooks import GatewayHooks, resolve_settings
    from faregate.plugins import load_plugins, unknown_plugin_names

    results: list[tuple[str, str, str]] = []
    plugins = load_plugins(check_names=False)  # a bad core setting stops here with its one line
    hooks = GatewayHooks(plugins.pm)
    settings = resolve_settings(hooks.settings())  # and a bad plugin setting here
    results.append((OK, "settings", "every setting is valid"))
    for problem in unknown_plugin_names(settings):  # `serve` refuses to start with these
        results.append((FAIL, "plugin names", problem))
    for report in plugins.errors:
        results.append((FAIL, f"plugin {report.name}", scrub(report.error or "failed to load")))
    if not plugins.errors:
        loaded = [r.name for r in plugins.reports if not r.builtin]
        results.append((OK, "plugins", ", ".join(loaded) or "no plugins beyond the built-in ones"))
    if not plugins.pm.hook.register_formats.get_hookimpls():  # asked without building the formats
        results.append((WARN, "formats", "no adapter plugin serves a client format: nothing can be relayed"))
    results.append(_data_dir(settings.data_dir))
    results.extend(run_async(_services(plugins, hooks, settings)))
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


async def _services(plugins: PluginSet, hooks: GatewayHooks, settings: Settings) -> list[tuple[str, str, str]]:
    from faregate.db import models as m
    from faregate.db import storage
    from faregate.errors import GatewayError

    results: list[tuple[str, str, str]] = []
    db_url = settings.db_url
    try:
        db_url = db_url or storage.default_url(settings.data_dir)
        tables: dict[str, DbModels] = {}
        for found in hooks.db_models():  # the first registration of an app wins, as in the gateway
            tables.setdefault(found.app, found)
        backend, db_config = storage.tortoise_config(db_url, hooks.storage_backends(), list(tables.values()))
        backend.tortoise_connection(db_url)  # a URL its engine cannot read (a port that is no number)
    except (OSError, ValueError, GatewayError) as exc:
        cause = exc.message if isinstance(exc, GatewayError) else describe_failure(exc, url_secrets(db_url))
        results.append((FAIL, "database", f"{settings.named('db_url')}: the database URL cannot be used: {cause}"))
        results.append(await _redis(settings.redis_url))
        return results
    try:
        await storage.open_storage(db_config)
        from tortoise import connections

        await connections.get("default").execute_query("SELECT 1")  # connections open lazily
    except Exception as exc:  # noqa: BLE001 - reported, whatever the driver raises
        cause = describe_failure(exc, url_secrets(db_url))
        results.append((FAIL, "database", f"{backend.name} unreachable: {cause}"))
        with contextlib.suppress(Exception):
            await storage.close_storage()
    else:
        try:
            results.append((OK, "database", f"{backend.name} answers"))
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
                served = _channel_types(plugins) if types else set()
                orphans = sorted(t for t in types if t not in served)
                if orphans:
                    results.append((WARN, "channels", f"enabled channels of type(s) {orphans} have no provider plugin "
                                    f"(installed types: {sorted(served)})"))
        finally:
            await storage.close_storage()
    results.append(await _redis(settings.redis_url))
    return results


def _channel_types(plugins: PluginSet) -> set[int]:
    """The channel types the providers serve: the providers are built with their gateway's
    services, so this builds a gateway (and imports the relay)."""
    from faregate.gateway import Gateway

    return set(Gateway(plugins).providers)


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
