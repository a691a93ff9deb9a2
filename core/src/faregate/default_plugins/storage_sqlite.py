"""SQLite, the embedded default (WAL, a generous busy timeout for several workers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faregate import hookimpl
from faregate.contracts import StorageBackend


class SQLiteBackend(StorageBackend):
    def tortoise_connection(self, url: str) -> dict[str, Any]:
        path = url.split("://", 1)[1].split("?", 1)[0]
        return {
            "engine": "tortoise.backends.sqlite",
            "credentials": {"file_path": path, "journal_mode": "WAL", "busy_timeout": 30000,
                            "synchronous": "NORMAL"},
        }


@hookimpl(trylast=True)
def register_storage_backends(register: Callable[[StorageBackend], None]) -> None:
    register(SQLiteBackend(name="sqlite", schemes=("sqlite",), description="SQLite (embedded, the default)"))
