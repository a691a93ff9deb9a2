"""Log rows fit their columns, so no value can make the database refuse a billing batch."""

from __future__ import annotations

from typing import Any

from faregate.billing.ledger import LogEntry
from faregate.billing.log_rows import INT32_MAX, log_row


def entry(**fields: object) -> LogEntry:
    base: dict[str, object] = dict(user_id=1, username="u", token_id=1, token_name="t", model_name="m", quota=5,
                                   prompt_tokens=1, completion_tokens=1, use_time=0, is_stream=False, channel_id=1,
                                   group="default", request_id="r")
    base.update(fields)
    return LogEntry(**base)  # type: ignore[arg-type]


def test_texts_are_cut_to_their_columns_and_counts_to_int32() -> None:
    row = log_row(entry(model_name="m" * 300, username="u" * 100, token_name="t" * 100, group="g" * 100,
                        ip="9" * 100, request_id="r" * 100, prompt_tokens=2**40, completion_tokens=-(2**40),
                        use_time=2**33))
    assert (len(row.model_name), len(row.username), len(row.token_name), len(row.group), len(row.ip),
            len(row.request_id or "")) == (255, 64, 64, 64, 64, 64)
    assert (row.prompt_tokens, row.completion_tokens, row.use_time) == (INT32_MAX, -INT32_MAX, INT32_MAX)


def test_values_that_fit_are_kept_as_they_are() -> None:
    row = log_row(entry(model_name="gpt-4o", request_id=None, other={"a": 1}))
    assert (row.model_name, row.request_id, row.other) == ("gpt-4o", None, '{"a":1}')


def test_a_row_is_built_as_tortoise_builds_it() -> None:
    # log_row skips tortoise's generic __init__; what it leaves must be the same (a tortoise
    # upgrade that changes its model state fails here, not in a billing batch)
    from faregate.billing.log_rows import new_log
    from faregate.db import models as m

    columns = {name: value for name, value in vars(log_row(entry(other={"a": 1}))).items()
               if name in m.Log._meta.fields_map and name != "id"}
    assert set(columns) == set(m.Log._meta.fields_map) - {"id"}
    assert vars(new_log(**columns)) == vars(m.Log(**columns))


async def test_rows_are_inserted_as_bulk_create_inserts_them(tmp_path: Any) -> None:
    # log_insert gives tortoise's INSERT itself and the rows' values, without model objects: the
    # rows the flush writes with it must be those bulk_create writes (every column, with its
    # type), on the dialect at hand
    from tortoise import Tortoise
    from tortoise.transactions import in_transaction

    from faregate.billing.log_rows import log_insert
    from faregate.db import models as m
    from faregate.db import storage
    from faregate.default_plugins.storage_sqlite import SQLiteBackend

    backend = SQLiteBackend(name="sqlite", schemes=("sqlite",))
    _, config = storage.tortoise_config(f"sqlite://{tmp_path}/l.db", [backend])
    await storage.migrate(config)
    await storage.open_storage(config)
    try:
        mine = [entry(request_id=f"a{i}", is_stream=bool(i % 2), other={"n": i}, content="c", ip="1.2.3.4",
                      created_at=1000 + i, model_name="m" * 300) for i in range(3)]
        theirs = [entry(request_id=f"b{i}", is_stream=bool(i % 2), other={"n": i}, content="c", ip="1.2.3.4",
                        created_at=1000 + i, model_name="m" * 300) for i in range(3)]
        async with in_transaction() as conn:
            await backend.run_statements(conn, [log_insert(mine, conn)])  # as the flush runs it
            await m.Log.bulk_create([log_row(e) for e in theirs], using_db=conn)
        rows = await m.Log.all().order_by("id").values()
        assert len(rows) == 6
        for a, b in zip(rows[:3], rows[3:], strict=True):
            assert a.pop("id") != b.pop("id")
            assert a.pop("request_id")[1:] == b.pop("request_id")[1:]
            assert a == b
        assert rows[1]["is_stream"] is True and rows[0]["other"] == '{"n":0}'
    finally:
        await Tortoise.close_connections()
