"""The storage conformance suite on SQLite (the embedded default)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from faregate.default_plugins.storage_sqlite import _run_all
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


async def test_a_transaction_that_read_first_still_writes_after_another_process_wrote(tmp_path: Path) -> None:
    """A transaction that reads and then writes (a management change: the name is free, then
    the update) while another process (a second worker) commits a write: with a plain BEGIN,
    SQLite refused the first write at once ("database is locked", whatever the busy timeout)
    and the admin got a 500. Transactions begin IMMEDIATE (faregate.db.sqlite_client): the
    write lock is the transaction's from its start and the other writer waits for it."""
    import asyncio
    import sqlite3

    from tortoise.expressions import F
    from tortoise.transactions import in_transaction

    from faregate.db import models as m
    from faregate.db import sqlite_client, storage
    from faregate.db.dsn import SQLITE_ENGINE
    from faregate.default_plugins.storage_sqlite import SQLiteBackend

    assert SQLITE_ENGINE == sqlite_client.__name__  # tortoise imports the engine by that name
    path = str(tmp_path / "immediate.db")
    _, config = storage.tortoise_config("sqlite://" + path, [SQLiteBackend(name="sqlite", schemes=("sqlite",))])
    await storage.migrate(config)
    await storage.open_storage(config)
    other = sqlite3.connect(path, timeout=0.3, isolation_level=None, check_same_thread=False)
    try:
        user = await m.User.create(username="reader", quota=10)

        def other_writes() -> None:
            other.execute("UPDATE users SET quota = quota + 1 WHERE id = ?", (user.id,))

        async with in_transaction() as conn:
            assert await m.User.filter(username="reader").using_db(conn).exists()  # a read first
            with pytest.raises(sqlite3.OperationalError, match="locked"):  # it waits for this transaction
                await asyncio.to_thread(other_writes)
            await m.User.filter(id=user.id).using_db(conn).update(quota=F("quota") + 5)
        await asyncio.to_thread(other_writes)  # once it is over, the other process writes
        assert (await m.User.get(id=user.id)).quota == 16
    finally:
        other.close()
        await storage.close_storage()


def test_rows_of_an_insert_go_in_one_statement_within_the_variable_limit() -> None:
    """SQLite's run_statements sends several rows of an INSERT as ``INSERT … VALUES (…), (…)``
    (executemany steps once a row, each step a GIL hand-over): statements of a power of two rows
    (so their SQL is cached), within the connection's variable limit, the rows in order;
    anything else still runs per row."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a INT, b TEXT)")
    run: list[str] = []
    db.set_trace_callback(run.append)  # each statement run, its values written in
    _run_all(db, [("INSERT INTO t (a, b) VALUES (?, ?)", [(i, f"r{i}") for i in range(22)])])
    assert [sql.count("'r") for sql in run] == [16, 4, 2]
    run.clear()
    db.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 7)  # three rows of two values fit: two a statement
    _run_all(db, [("INSERT INTO t (a, b) VALUES (?, ?)", [(i, f"r{i}") for i in range(22, 27)]),
                  ("UPDATE t SET a = a + ? WHERE id = ?", [(100, 1), (100, 2)])])
    assert [sql.count("'r") for sql in run[:3]] == [2, 2, 1]
    assert len(run) == 5  # and the UPDATE once per row
    assert db.execute("SELECT a, b FROM t ORDER BY id").fetchall() == \
        [(100, "r0"), (101, "r1"), *[(i, f"r{i}") for i in range(2, 27)]]
