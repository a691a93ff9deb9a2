"""Reading the database being imported from, read only: SQLite through the standard
library (opened ``mode=ro``, so the file is never written, not even a WAL), MySQL/MariaDB
and PostgreSQL through the storage plugins' tortoise engines, as a second connection."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from faregate.contracts import StorageBackend
from faregate.db.dsn import database_url, sqlite_file
from faregate.observe.causes import describe_failure, url_secrets

#: rows read per query: a page of a large log table, not the table
BATCH = 1000
SOURCE_CONNECTION = "import_source"


class SourceError(Exception):
    """The source cannot be opened or read (the message names what and why)."""


class Source(Protocol):
    async def tables(self) -> set[str]: ...

    async def columns(self, table: str) -> set[str]:
        """The column names of ``table`` (empty when there is no such table)."""
        ...

    async def count(self, table: str) -> int: ...

    def batches(self, table: str, *, keyed: bool = True) -> AsyncIterator[list[dict[str, Any]]]:
        """The rows of ``table`` in pages: by ascending ``id`` when ``keyed``, else the whole
        (small) table at once."""
        ...


def _plain(value: Any) -> Any:
    # drivers differ: MySQL's binary collations give bytes, JSON columns text or objects
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return value


class _SQLBatches:
    """Keyset paging over ``id``: each page is one cheap indexed query, at any table size."""

    async def query(self, sql: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    async def count(self, table: str) -> int:
        rows = await self.query(f"SELECT COUNT(*) AS n FROM {table}")  # noqa: S608 - known table names
        return int(next(iter(rows[0].values())))

    async def batches(self, table: str, *, keyed: bool = True) -> AsyncIterator[list[dict[str, Any]]]:
        if not keyed:
            rows = await self.query(f"SELECT * FROM {table}")  # noqa: S608
            if rows:
                yield rows
            return
        last = -(2**63)
        while True:
            rows = await self.query(f"SELECT * FROM {table} WHERE id > {int(last)} ORDER BY id LIMIT {BATCH}")  # noqa: S608
            if not rows:
                return
            yield rows
            last = int(rows[-1]["id"])


class SQLiteSource(_SQLBatches):
    def __init__(self, path: str) -> None:
        if not os.path.isfile(path):
            raise SourceError(f"no SQLite database at {path}")
        try:
            # a file: URI for mode=ro, built from the absolute path (a '?' or '#' in a name is quoted)
            self._db = sqlite3.connect(Path(os.path.abspath(path)).as_uri() + "?mode=ro", uri=True,
                                       check_same_thread=False)
        except sqlite3.Error as exc:
            raise SourceError(f"cannot open {path}: {exc}") from None
        self._db.row_factory = sqlite3.Row
        self._lock = asyncio.Lock()  # one thread at a time on the connection

    def _run(self, sql: str) -> list[dict[str, Any]]:
        return [{k: _plain(row[k]) for k in row.keys()} for row in self._db.execute(sql).fetchall()]

    async def query(self, sql: str) -> list[dict[str, Any]]:
        async with self._lock:
            try:
                return await asyncio.to_thread(self._run, sql)
            except sqlite3.Error as exc:
                raise SourceError(f"reading the source failed: {exc}") from None

    async def tables(self) -> set[str]:
        return {row["name"] for row in await self.query("SELECT name FROM sqlite_master WHERE type = 'table'")}

    async def columns(self, table: str) -> set[str]:
        return {str(row["name"]) for row in await self.query(f"PRAGMA table_info({_identifier(table)})")}

    def close(self) -> None:
        self._db.close()


class TortoiseSource(_SQLBatches):
    """A MySQL/MariaDB or PostgreSQL source, opened as an extra tortoise connection."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._dialect = str(client.capabilities.dialect)

    async def query(self, sql: str) -> list[dict[str, Any]]:
        try:
            rows = await self._client.execute_query_dict(sql)
        except Exception as exc:  # noqa: BLE001 - each driver has its own error classes
            raise SourceError(f"reading the source failed: {describe_failure(exc)}") from None
        return [{k: _plain(v) for k, v in row.items()} for row in rows]

    async def tables(self) -> set[str]:
        if self._dialect == "mysql":
            sql = "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()"
        else:
            sql = "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()"
        return {str(row.get("name") or row.get("NAME") or row.get("TABLE_NAME")) for row in await self.query(sql)}

    async def columns(self, table: str) -> set[str]:
        schema = "DATABASE()" if self._dialect == "mysql" else "current_schema()"
        sql = (f"SELECT column_name AS name FROM information_schema.columns "  # noqa: S608 - a checked name
               f"WHERE table_schema = {schema} AND table_name = '{_identifier(table)}'")
        return {str(row.get("name") or row.get("NAME") or row.get("COLUMN_NAME")) for row in await self.query(sql)}


def _identifier(name: str) -> str:
    """A table name put into SQL text: ours are plain words, anything else is refused."""
    if not name.replace("_", "").isalnum():
        raise SourceError(f"not a table name: {name!r}")
    return name


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite source (``sqlite:///abs``, SQLAlchemy's ``sqlite:////abs``,
    ``sqlite://rel``, or a bare path such as new-api's ``one-api.db``), None for another engine."""
    if "://" not in url:
        return url.split("?", 1)[0]
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("sqlite", "sqlite3"):
        return None
    return unquote(sqlite_file(url))


def source_url(dsn: str) -> str:
    """Any accepted form (a URL, a Go MySQL DSN, a SQLite path) as a URL."""
    dsn = dsn.strip()
    if not dsn:
        raise SourceError("--from needs a database: sqlite:///path/one-api.db, mysql://…, postgres://…")
    if sqlite_path(dsn) is not None and "://" not in dsn and "@tcp(" not in dsn:
        return "sqlite://" + dsn.split("?", 1)[0]
    try:
        return database_url(dsn)
    except ValueError as exc:
        raise SourceError(str(exc)) from None


@contextlib.asynccontextmanager
async def open_source(url: str, backends: Sequence[StorageBackend]) -> AsyncIterator[Source]:
    """The source at ``url``, open for the block."""
    path = sqlite_path(url)
    if path is not None:
        source = SQLiteSource(path)
        try:
            yield source
        finally:
            source.close()
        return
    import importlib

    from tortoise.backends.base.config_generator import expand_db_url

    from faregate.db.storage import pick_backend

    try:
        config = pick_backend(url, backends).tortoise_connection(url)
        info = expand_db_url(config) if isinstance(config, str) else config
        engine = importlib.import_module(info["engine"])
        client_class = engine.get_client_class(info) if hasattr(engine, "get_client_class") else engine.client_class
        # a client of its own, outside tortoise's registry: the target's connections are untouched
        client = client_class(connection_name=SOURCE_CONNECTION, **info["credentials"])
        await client.create_connection(with_db=True)
    except Exception as exc:  # noqa: BLE001 - unreachable host, bad password, unknown scheme …
        # the driver's words, its DSN's password masked (drivers quote their parameters)
        raise SourceError(f"cannot open the source: {describe_failure(exc, url_secrets(url))}") from None
    try:
        yield TortoiseSource(client)
    finally:
        with contextlib.suppress(Exception):
            await client.close()
