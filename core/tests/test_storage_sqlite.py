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


async def test_models_match_migrations() -> None:
    """``makemigrations`` would write nothing: every model change comes with its migration."""
    from tortoise.context import TortoiseContext
    from tortoise.migrations.autodetector import MigrationAutodetector

    from faregate.db.dev_config import TORTOISE_ORM

    async with TortoiseContext() as ctx:
        await ctx.init(config=TORTOISE_ORM)
        writers = await MigrationAutodetector(ctx.apps, TORTOISE_ORM["apps"]).changes()
    assert not writers, (
        "faregate/db/models.py changed without a migration: run "
        "`python -m tortoise -c faregate.db.dev_config.TORTOISE_ORM makemigrations --name <what>`; "
        f"pending: {[op for w in writers for op in w.operations]}")
