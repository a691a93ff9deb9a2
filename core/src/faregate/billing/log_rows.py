"""A log entry as the row the ledger writes: every text cut to its column and every count to
its column's range. The ledger writes a batch of rows in one transaction, so one value the
database refuses (MySQL and PostgreSQL refuse a too long string or an out-of-range integer;
SQLite takes anything) would fail the whole batch, charges included, on every retry."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from faregate import jsonutil
from faregate.db import models as m

if TYPE_CHECKING:
    from tortoise.backends.base.client import BaseDBAsyncClient

    from faregate.billing.pending import LogEntry

INT32_MAX = 2**31 - 1


@functools.cache
def _widths() -> dict[str, int]:
    """The logs table's text columns and their widths."""
    widths: dict[str, int] = {}
    for name, field in m.Log._meta.fields_map.items():
        width = getattr(field, "max_length", None)  # CharFields only
        if isinstance(width, int):
            widths[name] = width
    return widths


def _text(name: str, value: str) -> str:
    width = _widths().get(name)
    return value[:width] if width is not None and len(value) > width else value


def _count(value: int) -> int:
    return max(-INT32_MAX, min(INT32_MAX, value))


def log_columns(e: LogEntry) -> dict[str, Any]:
    """The row of ``e``: every column of the logs table but the id, each fit to its column."""
    return dict(user_id=e.user_id, created_at=e.created_at, type=e.type, content=e.content,
                username=_text("username", e.username), token_name=_text("token_name", e.token_name),
                model_name=_text("model_name", e.model_name), quota=int(e.quota),
                prompt_tokens=_count(e.prompt_tokens), completion_tokens=_count(e.completion_tokens),
                use_time=_count(e.use_time), is_stream=bool(e.is_stream), channel_id=e.channel_id,
                token_id=e.token_id, group=_text("group", e.group), ip=_text("ip", e.ip),
                request_id=_text("request_id", e.request_id) if e.request_id else e.request_id,
                other=jsonutil.dumps_str(e.other) if e.other else "")


def log_row(e: LogEntry) -> m.Log:
    return new_log(**log_columns(e))


def new_log(**columns: Any) -> m.Log:
    """``m.Log(**columns)`` for a row to insert, every column but the id given with its Python
    type: the state tortoise's ``__init__`` leaves, set directly. Its generic path (a guarded
    ``setattr`` and a conversion per field) was two thirds of building a row, once per request;
    tests/test_log_rows compares the two."""
    row = m.Log.__new__(m.Log)
    state = row.__dict__
    state.update(_partial=False, _saved_in_db=False, _custom_generated_pk=False, _await_when_save={}, id=None)
    state.update(columns)
    return row


def log_insert(entries: list[LogEntry], conn: BaseDBAsyncClient) -> tuple[str, list[list[Any]]]:
    """The INSERT of ``entries`` on ``conn`` (the ledger's transaction) and its rows of values:
    tortoise's own INSERT of the logs table (``bulk_create``'s, for the connection's dialect),
    to run with ``executemany``, the values straight from the entries. ``bulk_create`` made a
    model object per row and passed every field through its conversion and validators (~40 %
    of the billing batch's time; docs/benchmarks.md): :func:`log_columns` gives each column its
    Python type and fits it to its column, which is what those did. tests/test_log_rows
    compares the rows with tortoise's."""
    executor = conn.executor_class(model=m.Log, db=conn)  # its INSERT is cached per connection and table
    columns = executor.regular_columns
    rows = [log_columns(e) for e in entries]
    return executor.insert_query, [[row[c] for c in columns] for row in rows]

