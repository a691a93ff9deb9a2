"""The billing batch's statements as SQL made once per database connection, then run with new
values. Every flush (each ``FAREGATE_`` flush interval, 50 ms, while requests are settled) runs
the same few UPDATEs; tortoise builds each one's SQL afresh through pypika, about 100 µs of the
event loop per statement against 10 µs to run it (docs/benchmarks.md). A :class:`Statement`
is the tortoise query itself, built once per connection with stand-in values to learn its SQL
and where each value goes among its parameters: the dialect's quoting and placeholders are
tortoise's own. A value tortoise would write into the SQL text rather than pass as a parameter
is found out when the statement is made, and the statement then runs through tortoise each time.
A :class:`StatementBatch` collects the statements of a transaction whose results nothing reads
and hands them to the storage engine together (``StorageBackend.run_statements``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tortoise.backends.base.client import BaseDBAsyncClient

    from faregate.db.backend import Statements

#: ``StorageBackend.run_statements``: runs a transaction's statements, in order, on its connection
StatementRunner = Callable[[Any, "Statements"], Awaitable[None]]

#: the stand-in values a statement is built with (far from any quota, id, timestamp or name)
STAND_IN = 7_340_033_000_000
STAND_IN_TEXT = "~"  # short: a kind column holds 8 characters


class Statement:
    """``build(conn, *values)``: the tortoise query (an UPDATE or DELETE) for ``values`` on
    ``conn``, whose types ``types`` spells, one letter each (``i`` an int, ``s`` a string);
    :meth:`run` gives what awaiting it gives (the rows changed)."""

    __slots__ = ("_build", "_stand_ins", "_made")

    def __init__(self, build: Callable[..., Any], types: str) -> None:  # a tortoise AwaitableQuery
        self._build = build
        self._stand_ins: list[Any] = [STAND_IN + i if t == "i" else f"{STAND_IN_TEXT}{i}" for i, t in enumerate(types)]
        #: per connection name and dialect (tests open one name on several databases): the SQL,
        #: and per parameter the value's index (None: a constant of the query)
        self._made: dict[tuple[str, str], tuple[str, list[int | None], list[Any]] | None] = {}

    def _make(self, conn: BaseDBAsyncClient) -> tuple[str, list[int | None], list[Any]] | None:
        stand_ins = self._stand_ins
        query = self._build(conn, *stand_ins)
        query._make_query()  # what awaiting it does first
        sql, params = query.query.get_parameterized_sql()
        slots = [stand_ins.index(p) if type(p) in (int, str) and p in stand_ins else None for p in params]
        if sorted(i for i in slots if i is not None) != list(range(len(stand_ins))):
            return None  # a value went into the SQL text: never cached
        return sql, slots, list(params)

    def _sql(self, conn: BaseDBAsyncClient) -> tuple[str, list[int | None], list[Any]] | None:
        key = (conn.connection_name, conn.capabilities.dialect)
        if key not in self._made:
            self._made[key] = self._make(conn)
        return self._made[key]

    @staticmethod
    def _params(slots: list[int | None], constants: list[Any], values: Sequence[Any]) -> list[Any]:
        return [constant if i is None else values[i] for i, constant in zip(slots, constants, strict=True)]

    async def run(self, conn: BaseDBAsyncClient, *values: Any) -> Any:
        made = self._sql(conn)
        if made is None:
            return await self._build(conn, *values)
        sql, slots, constants = made
        count, _ = await conn.execute_query(sql, self._params(slots, constants, values))
        return count


class StatementBatch:
    """Statements of one transaction on ``conn`` whose results nothing reads, kept in order
    and sent by :meth:`run` through ``runner`` (the storage engine's ``run_statements``),
    together. A statement that runs through tortoise each time (see :class:`Statement`)
    sends what was collected before it, then runs on its own, so the order holds."""

    __slots__ = ("conn", "runner", "_items")

    def __init__(self, conn: BaseDBAsyncClient, runner: StatementRunner) -> None:
        self.conn, self.runner = conn, runner
        self._items: list[tuple[str, Sequence[Sequence[Any]]]] = []

    async def add(self, statement: Statement, *values: Any) -> None:
        await self.add_many(statement, [values])

    async def add_many(self, statement: Statement, rows: Sequence[Sequence[Any]]) -> None:
        made = statement._sql(self.conn)
        if made is None:
            await self.run()
            for values in rows:
                await statement._build(self.conn, *values)
            return
        sql, slots, constants = made
        self._items.append((sql, [Statement._params(slots, constants, values) for values in rows]))

    def add_sql(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._items.append((sql, rows))

    async def run(self) -> None:
        items, self._items = self._items, []
        if items:
            await self.runner(self.conn, items)
