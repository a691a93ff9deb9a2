"""What commands share: the gateway's plugin set and settings as ``serve`` would see
them, and its database opened (migrated first) for the length of a command."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from faregate.settings import ENV_PREFIX, SettingError, set_from_command_line

if TYPE_CHECKING:
    from faregate.gateway import Gateway
    from faregate.settings import Settings

T = TypeVar("T")


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """:func:`asyncio.run`, asyncio imported by the commands that run something: every
    command, ``--help`` and ``--version`` too, would otherwise pay for importing it."""
    import asyncio

    return asyncio.run(coro)


def export_flags(flags: Mapping[str, Any]) -> None:
    """Command-line flags given (not None) become ``FAREGATE_<NAME>`` variables: they win
    over the environment and the config file, here and in worker processes; the
    settings say they came from the command line (``faregate config show``, errors)."""
    for name, value in flags.items():
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            flag = flag if value else "--no-" + flag.removeprefix("--")
            value = "true" if value else "false"
        set_from_command_line(ENV_PREFIX + name.upper(), str(value), flag)


def load_gateway(*, check_plugin_names: bool = True) -> Gateway:
    """The gateway of this environment (plugins, settings), not yet started; a bad
    setting raises :class:`faregate.settings.SettingError` (a plugin name no installed
    plugin has too, unless ``check_plugin_names`` is false: ``doctor`` reports it)."""
    from faregate.plugins import load_plugins

    plugins = load_plugins(check_names=check_plugin_names)  # first: a bad core setting stops it before
    from faregate.gateway import Gateway  # the gateway's imports, which cost seconds

    return Gateway(plugins)


def load_settings() -> Settings:
    """The settings of this environment as ``serve`` would resolve them (the core's and the
    enabled plugins'), without building a gateway: its providers, clients and secrets files
    are more than ``config show`` needs."""
    from faregate.hooks import GatewayHooks, resolve_settings
    from faregate.plugins import load_plugins

    return resolve_settings(GatewayHooks(load_plugins().pm).settings())


def database_error(gateway: Gateway, exc: BaseException) -> SettingError:
    """The one line a database that cannot be opened stops a command with: the setting that
    chose it, the URL and the driver's reason, passwords masked."""
    from faregate.observe.causes import brief_failure, scrub, url_secrets

    settings = gateway.settings
    where = settings.named("db_url") if settings.db_url else settings.named("data_dir")
    secrets = url_secrets(gateway.db_url)
    return SettingError(f"{where}: cannot open the database {scrub(gateway.db_url, secrets)}: "
                        f"{brief_failure(exc, secrets)}")


async def reach_database(gateway: Gateway) -> None:
    """Connect once; a database that cannot be opened is a :class:`SettingError`
    (:func:`database_error`), not a driver's traceback."""
    from faregate.db import storage

    try:
        await storage.probe(gateway.db_config)
    except Exception as exc:  # noqa: BLE001 - whatever the driver raises, told in one line
        raise database_error(gateway, exc) from None


async def migrate_database(gateway: Gateway) -> None:
    """Apply the migrations, once the database is known to open."""
    from faregate.db import storage

    await reach_database(gateway)
    await storage.migrate(gateway.db_config, gateway.backend.migration_lock(gateway.db_url))


@contextlib.asynccontextmanager
async def open_database(gateway: Gateway, *, migrate: bool = True) -> AsyncIterator[Gateway]:
    """The gateway's database, migrated (unless ``migrate`` is false) and open; one that
    cannot be opened is a :class:`SettingError`."""
    from faregate.db import storage

    await reach_database(gateway)
    if migrate:
        await storage.migrate(gateway.db_config, gateway.backend.migration_lock(gateway.db_url))
    await storage.open_storage(gateway.db_config)
    try:
        yield gateway
    finally:
        await storage.close_storage()


async def announce(gateway: Gateway, kind: str, ref_id: int = 0) -> list[str]:
    """Tell running gateways that a row changed (``all``: everything), as the management API does
    after a write: the change event in the database, the epoch the processes sharing this
    database on this host read (beside a SQLite database, else in the data directory), and Redis
    for other hosts when it is set. Says, a sentence each, who was told and who catches up later."""
    from faregate.db import models as m
    from faregate.state.changefeed import REDIS_CHANNEL, EpochFile, epoch_path

    await m.ChangeEvent.create(kind=kind, ref_id=ref_id, created_at=int(time.time()))
    path = epoch_path(gateway.settings.data_dir, gateway.db_url)
    epoch = EpochFile(path)
    try:
        epoch.bump()
    finally:
        epoch.close()
    told = [f"running gateways on this host that share {path} were told to reload"]
    later = (f"gateways elsewhere see the change within {gateway.settings.sync_interval:g} s (their "
             "periodic check of the database)")
    if not gateway.settings.redis_url:
        return [*told, f"no FAREGATE_REDIS_URL here: {later}"]
    import redis.asyncio as aioredis

    client = aioredis.from_url(gateway.settings.redis_url)
    try:
        await client.publish(REDIS_CHANNEL, b"1")
        told.append("gateways on other hosts were told through Redis")
    except Exception as exc:  # noqa: BLE001 - the gateways' polling picks the change up
        told.append(f"Redis could not be told ({type(exc).__name__}): {later}")
    finally:
        await client.aclose()
    return told
