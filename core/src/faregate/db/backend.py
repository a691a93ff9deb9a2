"""Storage engines and a plugin's own tables: what a storage plugin hands over (re-exported by
:mod:`faregate.contracts` and :mod:`faregate.api`)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

#: statements to run in order, each once per row of its parameters: ``(sql, rows)``
Statements = Sequence[tuple[str, Sequence[Sequence[Any]]]]


async def run_each(conn: Any, statements: Statements) -> None:
    """Run ``statements`` on ``conn`` (a tortoise client, in its transaction) one call each:
    ``execute_query`` for one row of parameters, ``execute_many`` for more."""
    for sql, rows in statements:
        if len(rows) == 1:
            await conn.execute_query(sql, list(rows[0]))
        elif rows:
            await conn.execute_many(sql, [list(row) for row in rows])


@dataclass(slots=True)
class StorageBackend:
    """A database engine: ``name`` chosen by ``FAREGATE_DB_URL``'s scheme(s)."""

    name: str
    schemes: tuple[str, ...]
    description: str = ""

    def tortoise_connection(self, url: str) -> dict[str, Any] | str:
        """The tortoise connection config for ``url``; defaults to the URL itself."""
        return url

    def migration_lock(self, url: str) -> AbstractAsyncContextManager[object]:
        """Held while migrations run, so that nodes started at once against one database
        migrate one after the other (the second finds nothing left to apply) instead of
        both creating the same tables. Default: no lock."""
        return contextlib.nullcontext()

    async def run_statements(self, conn: Any, statements: Statements) -> None:
        """Run ``statements`` in order on ``conn``, a tortoise client inside a transaction,
        when nothing reads their results (the billing flush's writes). An engine may send
        them together; an error is tortoise's (``OperationalError``, ``IntegrityError``), as
        from one statement run through tortoise, and leaves the transaction to be rolled back.
        Default: one call each (:func:`run_each`). The storage conformance suite checks it."""
        await run_each(conn, statements)


@dataclass(slots=True, frozen=True)
class DbModels:
    """A plugin's own tables: ``app`` (a short unique label, e.g. ``payments_stripe``),
    the module holding its tortoise models, and the package of its migrations
    (tortoise migration files, like the core's). ``faregate migrate`` applies them on
    every engine after the core's."""

    app: str
    models: str
    migrations: str
