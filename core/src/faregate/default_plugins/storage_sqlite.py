"""SQLite, the embedded default (WAL, a generous busy timeout for several workers)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import os
import re
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from faregate import hookimpl
from faregate.db.backend import Statements, StorageBackend, run_each
from faregate.db.dsn import SQLITE_ENGINE, sqlite_file


def _path(url: str) -> str:
    return sqlite_file(url)


class SQLiteBackend(StorageBackend):
    @contextlib.asynccontextmanager
    async def migration_lock(self, url: str) -> AsyncIterator[object]:
        """An exclusive lock on a file beside the database (processes of one machine, the
        only ones that share an SQLite file), waited for in a thread."""
        path = _path(url)
        if path in ("", ":memory:"):
            yield None
            return
        fd = os.open(f"{path}.migrate-lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
            yield None
        finally:
            os.close(fd)  # closing releases the lock

    def tortoise_connection(self, url: str) -> dict[str, Any]:
        path = _path(url)
        return {
            "engine": SQLITE_ENGINE,  # tortoise's SQLite client, transactions begun IMMEDIATE
            "credentials": {"file_path": path, "journal_mode": "WAL", "busy_timeout": 30000,
                            "synchronous": "NORMAL"},
        }

    async def run_statements(self, conn: Any, statements: Statements) -> None:
        """All of them in one call on the connection's thread (aiosqlite runs each call
        there): each call is a hand-over to that thread and back to the event loop, most of
        what a small statement costs, and a billing flush is about ten of them."""
        execute = getattr(getattr(conn, "_connection", None), "_execute", None)  # aiosqlite's Connection
        if execute is None:  # another tortoise or aiosqlite than the one this was written for
            await run_each(conn, statements)
            return
        # not at import: `faregate config` and `doctor` load this plugin and need no ORM
        from tortoise.exceptions import IntegrityError, OperationalError

        async with conn.acquire_connection() as connection:  # the client's lock, as its own calls take it
            try:
                await execute(_run_all, connection._conn, statements)
            except sqlite3.OperationalError as exc:  # as tortoise's SQLite client translates them
                raise OperationalError(exc) from exc
            except sqlite3.IntegrityError as exc:
                raise IntegrityError(exc) from exc


def _run_all(db: sqlite3.Connection, statements: Statements) -> None:
    for sql, rows in statements:
        if len(rows) == 1:
            db.execute(sql, rows[0])
        elif rows:
            insert = _one_row_insert(sql)
            if insert is None:
                db.executemany(sql, rows)
            else:
                _insert_rows(db, *insert, rows)


#: an INSERT of one row of placeholders and nothing after it (tortoise's bulk INSERT, the log rows')
_ONE_ROW_INSERT = re.compile(r"(INSERT\s.+?\sVALUES\s*)(\(\s*\?(?:\s*,\s*\?)*\s*\))\s*", re.IGNORECASE | re.DOTALL)
#: rows in one INSERT at most (and no more variables than the connection allows)
MAX_INSERT_ROWS = 256


@functools.lru_cache(maxsize=64)
def _one_row_insert(sql: str) -> tuple[str, str] | None:
    """``(head, row)`` of ``INSERT … VALUES (?, …)``, None for any other statement."""
    found = _ONE_ROW_INSERT.fullmatch(sql)
    return None if found is None else (found[1], found[2])


def _insert_rows(db: sqlite3.Connection, head: str, row: str, rows: Sequence[Sequence[Any]]) -> None:
    """Several rows as one ``INSERT … VALUES (…), (…)``, not ``executemany``: sqlite3 lets go
    of the GIL around every step of a statement, once a row with ``executemany``, and under a
    busy event loop each step's return waits for the GIL, woken at each of the loop's own
    releases (futex calls, system time): a flush's log rows cost this thread more than the
    rows themselves (docs/benchmarks.md). Statements of a power of two rows each (22 rows: 16, 4
    and 2), so a few SQL texts serve every batch from sqlite3's statement cache, where one of
    each batch's own size was parsed anew most times."""
    fit = max(1, min(MAX_INSERT_ROWS, db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // max(1, len(rows[0]))))
    most = 1 << (fit.bit_length() - 1)  # the largest power of two that fits
    start = 0
    while start < len(rows):
        size = min(most, 1 << ((len(rows) - start).bit_length() - 1))
        chunk = rows[start:start + size]
        db.execute(head + ",".join([row] * size), [value for values in chunk for value in values])
        start += size


@hookimpl(trylast=True)
def register_storage_backends(register: Callable[[StorageBackend], None]) -> None:
    register(SQLiteBackend(name="sqlite", schemes=("sqlite",), description="SQLite (embedded, the default)"))
