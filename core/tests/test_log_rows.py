"""Log rows fit their columns, so no value can make the database refuse a billing batch."""

from __future__ import annotations

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
