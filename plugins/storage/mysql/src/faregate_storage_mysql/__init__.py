"""MySQL / MariaDB storage for Faregate (tortoise's ``mysql`` backend over aiomysql).

``FAREGATE_DB_URL=mysql://user:password@host:3306/faregate?maxsize=20``
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from faregate.api import StorageBackend, hookimpl

# every re-run of the migrations says CREATE TABLE IF NOT EXISTS for tortoise's own
# bookkeeping table; MySQL answers with a note that aiomysql turns into a warning
warnings.filterwarnings("ignore", message=r"Table 'tortoise_migrations' already exists")

#: query parameters the URL may carry, with their types; anything else is an error
#: so a typo does not silently fall back to a default
PARAMS: dict[str, Callable[[str], Any]] = {
    "minsize": int,
    "maxsize": int,
    "pool_recycle": int,  # seconds; must be an int (tortoise#784)
    "connect_timeout": float,
    "charset": str,
    "storage_engine": str,
    "sql_mode": str,
}

DEFAULTS: dict[str, Any] = {
    "charset": "utf8mb4",  # full Unicode (emoji) in every text column
    "minsize": 1,
    "maxsize": 10,
    # below the server's wait_timeout (8 h by default) and typical proxy idle limits,
    # so a pooled connection is never used after the server dropped it
    "pool_recycle": 3600,
    "connect_timeout": 10.0,
}


#: the named lock nodes migrating one database take (per database: several may share a server)
MIGRATION_LOCK = "faregate_migrate:{database}"
#: seconds a node waits for another's migrations
MIGRATION_WAIT = 600


class MySQLBackend(StorageBackend):
    def tortoise_connection(self, url: str) -> dict[str, Any]:
        return {"engine": "tortoise.backends.mysql", "credentials": parse_url(url)}

    @contextlib.asynccontextmanager
    async def migration_lock(self, url: str) -> AsyncIterator[object]:
        """``GET_LOCK`` on a connection of its own, held while tortoise migrates on others
        (a named lock belongs to its session: closing the connection releases it too)."""
        import aiomysql  # type: ignore[import-untyped]  # no stubs published

        credentials = parse_url(url)
        conn = await aiomysql.connect(host=credentials["host"], port=credentials["port"], user=credentials["user"],
                                      password=credentials["password"], db=credentials["database"],
                                      connect_timeout=credentials["connect_timeout"])
        try:
            name = MIGRATION_LOCK.format(database=credentials["database"])[:64]
            async with conn.cursor() as cursor:
                await cursor.execute("SELECT GET_LOCK(%s, %s)", (name, MIGRATION_WAIT))
                (got,) = await cursor.fetchone()
            if got != 1:
                raise RuntimeError(f"another node held the migration lock for {MIGRATION_WAIT} s")
            yield None
        finally:
            conn.close()


def parse_url(url: str) -> dict[str, Any]:
    """``mysql://user:pass@host:port/db?maxsize=20`` → tortoise mysql credentials."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("mysql", "mariadb"):
        raise ValueError(f"not a MySQL URL: {parts.scheme}://…")
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise ValueError("the MySQL URL names no database (mysql://user:pass@host:3306/<database>)")
    credentials: dict[str, Any] = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": unquote(parts.username or "root"),
        "password": unquote(parts.password or ""),  # aiomysql wants a str, never None
        "database": database,
        **DEFAULTS,
    }
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        cast = PARAMS.get(key)
        if cast is None:
            raise ValueError(f"unknown MySQL URL parameter {key!r} (known: {', '.join(sorted(PARAMS))})")
        try:
            credentials[key] = cast(value)
        except ValueError as exc:
            raise ValueError(f"MySQL URL parameter {key}={value!r}: {exc}") from None
    return credentials


@hookimpl
def register_storage_backends(register: Callable[[StorageBackend], None]) -> None:
    register(MySQLBackend(name="mysql", schemes=("mysql", "mariadb"),
                          description="MySQL 8 / MariaDB 10.6+ (aiomysql)"))
