"""The storage conformance suite on SQLite (the embedded default)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from faregate.testing.conformance import StorageConformance


class TestSQLite(StorageConformance):
    backend_name = "sqlite"

    @pytest_asyncio.fixture
    async def db_url(self, tmp_path: Path) -> AsyncIterator[str]:
        # a fresh file per test; tmp_path removes it
        yield "sqlite://" + str(tmp_path / "conformance.db")
