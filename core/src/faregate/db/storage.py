"""Opening the database: pick the storage backend by URL scheme, apply migrations,
initialise tortoise."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import pkgutil
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from tortoise import Tortoise

from faregate.db.backend import DbModels, StorageBackend
from faregate.db.dsn import SQLITE_ENGINE
from faregate.errors import GatewayError
from faregate.security.files import private_dir, private_file

log = logging.getLogger("faregate.storage")

CORE_APP = "faregate"
MODELS_MODULE = "faregate.db.models"
MIGRATIONS_MODULE = "faregate.db.migrations"


def default_url(data_dir: str) -> str:
    """The embedded SQLite database in ``data_dir``, created private (0600 in a 0700 directory)."""
    private_dir(data_dir)
    return "sqlite://" + private_file(os.path.abspath(os.path.join(data_dir, "faregate.db")))


def pick_backend(url: str, backends: Sequence[StorageBackend]) -> StorageBackend:
    scheme = url.split(":", 1)[0].lower()
    for backend in backends:
        if scheme in backend.schemes:
            return backend
    names = ", ".join(sorted({s for b in backends for s in b.schemes}))
    raise GatewayError(500, f"no storage plugin for {scheme!r} URLs (installed: {names})", code="storage")


def tortoise_config(url: str, backends: Sequence[StorageBackend],
                    plugin_models: Sequence[DbModels] = ()) -> tuple[StorageBackend, dict[str, Any]]:
    """The tortoise config for ``url``: the core's app ``faregate`` and one app per
    plugin that registered tables (``register_db_models``), all on one connection."""
    backend = pick_backend(url, backends)
    apps: dict[str, dict[str, Any]] = {
        CORE_APP: {"models": [MODELS_MODULE], "migrations": MIGRATIONS_MODULE, "default_connection": "default"},
    }
    for tables in plugin_models:
        if tables.app in apps:
            raise GatewayError(500, f"plugin tables cannot use the app label {tables.app!r}: it is taken",
                               code="storage")
        apps[tables.app] = {"models": [tables.models], "migrations": tables.migrations,
                            "default_connection": "default"}
    return backend, {"connections": {"default": backend.tortoise_connection(url)}, "apps": apps, "use_tz": False}


async def migrate(config: dict[str, Any], lock: AbstractAsyncContextManager[object] | None = None) -> None:
    """Apply pending schema migrations of the core and of every plugin app in ``config``
    (every upgrade keeps existing rows), holding ``lock`` (the engine's
    :meth:`StorageBackend.migration_lock`) throughout."""
    from tortoise.migrations.api import migrate as run

    async with lock or contextlib.nullcontext():
        _forget_cached_sql()
        await run(config=config)
        await Tortoise.close_connections()


#: the tortoise engines of SQLite connections: the core's, and tortoise's own (a plugin's config)
SQLITE_ENGINES = (SQLITE_ENGINE, "tortoise.backends.sqlite")


def sqlite_file_of(config: dict[str, Any]) -> str | None:
    """The file a tortoise config's default connection opens when it is SQLite's (a path or
    ``:memory:``), else None."""
    connection = config["connections"]["default"]
    if isinstance(connection, dict) and connection.get("engine") in SQLITE_ENGINES:
        return str(connection["credentials"]["file_path"])
    return None


async def probe(config: dict[str, Any]) -> None:
    """Connect and ask ``SELECT 1`` (tortoise connects lazily), then close: whatever stops a
    connection (a wrong password or database name, a host that does not answer, a SQLite
    file that cannot be opened) raises the driver's own error here."""
    from tortoise import connections

    path = sqlite_file_of(config)
    if path is not None:
        # opened directly first: aiosqlite leaves the thread of a connection that failed to
        # open running, and it dies noisily once the event loop is gone
        await asyncio.to_thread(lambda: sqlite3.connect(path).close())
    try:
        await open_storage(config)
        await connections.get("default").execute_query("SELECT 1")
    finally:
        await close_storage()


async def open_storage(config: dict[str, Any]) -> None:
    _forget_cached_sql()
    # the lifespan task initialises; request tasks must see the same ORM state
    await Tortoise.init(config=config, _enable_global_fallback=True)


def _forget_cached_sql() -> None:
    """Tortoise caches each table's INSERT/DELETE SQL per connection *name* for the
    life of the process; a process that opens another engine under the same name
    (the storage test suites run SQLite, MySQL and PostgreSQL in one process) would
    reuse the other dialect's SQL."""
    from tortoise.backends.base.executor import EXECUTOR_CACHE

    EXECUTOR_CACHE.clear()


def shipped_migrations(module: str = MIGRATIONS_MODULE) -> list[str]:
    """The migration files a package ships, in order (``0001_initial``, …)."""
    package = importlib.import_module(module)
    return sorted(info.name for info in pkgutil.iter_modules(package.__path__) if info.name[:4].isdigit())


async def applied_migrations(app: str = CORE_APP) -> list[str]:
    """The migrations of ``app`` recorded as applied in the open database, in order."""
    from tortoise import connections

    rows = await connections.get("default").execute_query_dict("SELECT app, name FROM tortoise_migrations ORDER BY id")
    return [row["name"] for row in rows if row["app"] == app]


async def close_storage() -> None:
    await Tortoise.close_connections()
