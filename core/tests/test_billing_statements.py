"""faregate.billing.statements: a tortoise query's SQL made once per connection, run with new values."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tortoise import Tortoise
from tortoise.expressions import F
from tortoise.transactions import in_transaction

from faregate.billing.statements import Statement, StatementBatch
from faregate.db import models as m
from faregate.db import storage
from faregate.db.backend import run_each
from faregate.default_plugins.storage_sqlite import SQLiteBackend


@pytest.fixture
async def db(tmp_path: Any) -> AsyncIterator[None]:
    backend = SQLiteBackend(name="sqlite", schemes=("sqlite",))
    _, config = storage.tortoise_config(f"sqlite://{tmp_path}/s.db", [backend])
    await storage.migrate(config)
    await storage.open_storage(config)
    yield
    await Tortoise.close_connections()


USED = Statement(
    lambda conn, quota, count, uid: (
        m.User.filter(id=uid)
        .using_db(conn)
        .update(used_quota=F("used_quota") + quota, request_count=F("request_count") + count)
    ),
    "iii",
)


async def test_values_go_where_tortoise_puts_them_and_the_sql_is_made_once(db: None) -> None:
    a = await m.User.create(username="a")
    b = await m.User.create(username="b")
    async with in_transaction() as conn:
        assert await USED.run(conn, 5, 1, a.id) == 1
        writes = StatementBatch(conn, run_each)  # the billing flush's way: executemany
        await writes.add_many(USED, [(7, 2, a.id), (100, 3, b.id)])
        await writes.run()
        made = USED._made[conn.connection_name, conn.capabilities.dialect]
        assert made is not None and made[1] == [0, 1, 2]
    assert [(u.used_quota, u.request_count) for u in await m.User.all().order_by("id")] == [(12, 3), (100, 3)]


async def test_a_constant_of_the_query_and_the_rows_changed(db: None) -> None:
    await m.Worker.create(id="w1", heartbeat=0)
    beat = Statement(lambda conn, n, worker: m.Worker.filter(id=worker).using_db(conn).update(flushed=n), "is")
    empty = Statement(lambda conn, worker: m.QuotaLease.filter(worker=worker, held=0).using_db(conn).delete(), "s")
    await m.QuotaLease.create(worker="w1", kind="user", ref_id=1, held=0)
    await m.QuotaLease.create(worker="w1", kind="token", ref_id=1, held=5)
    async with in_transaction() as conn:
        assert await beat.run(conn, 1, "w1") == 1
        assert await beat.run(conn, 1, "w2") == 0
        assert await empty.run(conn, "w1") == 1
    assert await m.QuotaLease.all().values_list("kind", flat=True) == ["token"]


async def test_a_value_the_query_does_not_pass_as_it_is_runs_through_tortoise_each_time(db: None) -> None:
    user = await m.User.create(username="u")
    # the value changed on its way into the query (as one written into the SQL text would be):
    # the SQL made with the stand-in cannot take it, so tortoise builds the query every time
    renamed = Statement(lambda conn, n, uid: m.User.filter(id=uid).using_db(conn).update(username=f"user{n}"), "ii")
    async with in_transaction() as conn:
        await renamed.run(conn, 4, user.id)
        assert (await m.User.get(id=user.id).using_db(conn)).username == "user4"
        writes = StatementBatch(conn, run_each)
        await writes.add_many(renamed, [(6, user.id)])
        await writes.run()
        assert renamed._made[conn.connection_name, conn.capabilities.dialect] is None
    assert (await m.User.get(id=user.id)).username == "user6"
