"""tortoise's SQLite client, its transactions begun with ``BEGIN IMMEDIATE``.

SQLite in WAL mode lets a transaction begun with a plain ``BEGIN`` read first and write later;
when another process (a second worker) committed a write in between, that first write fails
at once with "database is locked", whatever the busy timeout: the transaction's snapshot is
stale and SQLite cannot wait its way out of it. A management change that reads a row and then
updates it (``PUT /api/user/``: the name is free, then the update) failed so under two workers.
``BEGIN IMMEDIATE`` takes the write lock when the transaction begins, waiting for it as long as
the busy timeout allows, so a transaction never meets another's write half-way (SQLite's advice
for transactions that write). Transactions here are for writes; reads outside them are not
affected. The autocommit connection holds no transaction between them, so the ``COMMIT``
tortoise sends before each ``BEGIN`` (a hand-over to aiosqlite's thread of its own) is sent only
when one is open."""

from __future__ import annotations

import sqlite3
from typing import Any

from tortoise.backends.base.client import TransactionContext
from tortoise.backends.sqlite.client import SqliteClient, SqliteTransactionContext, SqliteTransactionWrapper
from tortoise.exceptions import OperationalError


class ImmediateTransactionWrapper(SqliteTransactionWrapper):
    async def begin(self) -> None:
        try:
            if self._connection.in_transaction:
                await self._connection.commit()
            await self._connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:  # the write lock not had within the busy timeout
            raise OperationalError(exc) from exc


class ImmediateSqliteClient(SqliteClient):
    def _in_transaction(self) -> TransactionContext:
        return SqliteTransactionContext(ImmediateTransactionWrapper(self), self._lock)


def get_client_class(db_info: dict[str, Any]) -> type[SqliteClient]:
    """What tortoise asks an engine module for."""
    return ImmediateSqliteClient


client_class = ImmediateSqliteClient
