"""PostgreSQL storage for Faregate (tortoise's ``asyncpg`` backend).

``FAREGATE_DB_URL=postgres://user:password@host:5432/faregate?maxsize=20``
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from faregate.api import StorageBackend, hookimpl

#: URL query parameter -> (asyncpg/tortoise keyword, type); anything else is an error
#: so a typo does not silently fall back to a default
PARAMS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "minsize": ("minsize", int),
    "maxsize": ("maxsize", int),
    # asyncpg's equivalent of a pool recycle: idle connections older than this close
    "max_inactive_connection_lifetime": ("max_inactive_connection_lifetime", float),
    "pool_recycle": ("max_inactive_connection_lifetime", float),
    "connect_timeout": ("timeout", float),
    "command_timeout": ("command_timeout", float),
    "sslmode": ("ssl", str),  # disable | prefer | require | verify-ca | verify-full
    "ssl": ("ssl", str),
    "schema": ("schema", str),
    "application_name": ("application_name", str),
    # 0 behind PgBouncer in transaction mode (no server-side prepared statements)
    "statement_cache_size": ("statement_cache_size", int),
    "host": ("host", str),  # a unix socket directory
}

DEFAULTS: dict[str, Any] = {
    "minsize": 1,
    "maxsize": 10,
    "max_inactive_connection_lifetime": 300.0,
    "timeout": 10.0,  # connect timeout
    "application_name": "faregate",
}


class PostgresBackend(StorageBackend):
    def tortoise_connection(self, url: str) -> dict[str, Any]:
        return {"engine": "tortoise.backends.asyncpg", "credentials": parse_url(url)}

    @contextlib.asynccontextmanager
    async def migration_lock(self, url: str) -> AsyncIterator[object]:
        """A session advisory lock (per database: the key is the database's name) on a
        connection of its own, held while tortoise migrates on others; closing the
        connection releases it too."""
        import asyncpg  # type: ignore[import-untyped]  # no stubs published

        credentials = parse_url(url)
        conn = await asyncpg.connect(host=credentials["host"], port=credentials["port"], user=credentials["user"],
                                     password=credentials["password"], database=credentials["database"],
                                     timeout=credentials["timeout"], ssl=credentials.get("ssl"))
        try:
            key = zlib.crc32(f"faregate_migrate:{credentials['database']}".encode())
            await conn.execute("SELECT pg_advisory_lock($1)", key)
            yield None
        finally:
            await conn.close()


def parse_url(url: str) -> dict[str, Any]:
    """``postgres://user:pass@host:port/db?maxsize=20`` → tortoise asyncpg credentials."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("postgres", "postgresql"):
        raise ValueError(f"not a PostgreSQL URL: {parts.scheme}://…")
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise ValueError("the PostgreSQL URL names no database (postgres://user:pass@host:5432/<database>)")
    credentials: dict[str, Any] = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 5432,
        # None lets asyncpg use PGUSER / the OS user and PGPASSWORD / ~/.pgpass
        "user": unquote(parts.username) if parts.username else None,
        "password": unquote(parts.password) if parts.password else None,
        "database": database,
        **DEFAULTS,
    }
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        known = PARAMS.get(key)
        if known is None:
            raise ValueError(f"unknown PostgreSQL URL parameter {key!r} (known: {', '.join(sorted(PARAMS))})")
        name, cast = known
        try:
            credentials[name] = cast(value)
        except ValueError as exc:
            raise ValueError(f"PostgreSQL URL parameter {key}={value!r}: {exc}") from None
    return credentials


@hookimpl
def register_storage_backends(register: Callable[[StorageBackend], None]) -> None:
    register(PostgresBackend(name="postgres", schemes=("postgres", "postgresql"),
                             description="PostgreSQL 13+ (asyncpg)"))
