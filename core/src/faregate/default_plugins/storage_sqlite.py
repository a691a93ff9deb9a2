"""SQLite, the embedded default (WAL, a generous busy timeout for several workers)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from faregate import hookimpl
from faregate.db.backend import StorageBackend
from faregate.db.dsn import sqlite_file


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
            "engine": "tortoise.backends.sqlite",
            "credentials": {"file_path": path, "journal_mode": "WAL", "busy_timeout": 30000,
                            "synchronous": "NORMAL"},
        }


@hookimpl(trylast=True)
def register_storage_backends(register: Callable[[StorageBackend], None]) -> None:
    register(SQLiteBackend(name="sqlite", schemes=("sqlite",), description="SQLite (embedded, the default)"))
