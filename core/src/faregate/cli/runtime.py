"""What commands share: the gateway's plugin set and settings as ``serve`` would see
them, and its database opened (migrated first) for the length of a command."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from faregate.settings import ENV_PREFIX, SettingError, set_from_command_line

if TYPE_CHECKING:
    from faregate.gateway import Gateway


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
    from faregate.gateway import Gateway
    from faregate.plugins import load_plugins

    return Gateway(load_plugins(check_names=check_plugin_names))


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


async def announce(gateway: Gateway, kind: str, ref_id: int = 0) -> None:
    """Tell running gateways (this host's workers, and other hosts through Redis) that a
    row changed, as the management API does after a write."""
    from faregate.db import models as m
    from faregate.state.changefeed import REDIS_CHANNEL, EpochFile

    await m.ChangeEvent.create(kind=kind, ref_id=ref_id, created_at=int(time.time()))
    epoch = EpochFile(os.path.join(gateway.settings.data_dir, "faregate.epoch"))
    try:
        epoch.bump()
    finally:
        epoch.close()
    if gateway.settings.redis_url:
        import redis.asyncio as aioredis

        client = aioredis.from_url(gateway.settings.redis_url)
        try:
            await client.publish(REDIS_CHANNEL, b"1")
        except Exception:  # noqa: BLE001 - the gateways' polling picks the change up
            pass
        finally:
            await client.aclose()
