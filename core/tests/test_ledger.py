"""The quota ledger's invariants on SQLite, including a worker wrongly swept as dead."""

from __future__ import annotations

import pytest
from tortoise import Tortoise

from faregate.billing.ledger import InsufficientQuota, LogEntry, QuotaLedger, sweep_dead_workers
from faregate.db import models as m
from faregate.db import storage
from faregate.default_plugins.storage_sqlite import SQLiteBackend

INITIAL = 10_000


@pytest.fixture
async def db(tmp_path):
    backend = SQLiteBackend(name="sqlite", schemes=("sqlite",))
    _, config = storage.tortoise_config(f"sqlite://{tmp_path}/l.db", [backend])
    await storage.migrate(config)
    await storage.open_storage(config)
    user = await m.User.create(username="u", quota=INITIAL)
    yield user
    await Tortoise.close_connections()


def entry(user_id: int, quota: int, rid: str) -> LogEntry:
    return LogEntry(user_id=user_id, username="u", token_id=0, token_name="", model_name="x", quota=quota,
                    prompt_tokens=1, completion_tokens=1, use_time=0, is_stream=False, channel_id=0,
                    group="default", request_id=rid)


async def balance_parts(user_id: int) -> tuple[int, int, int]:
    quota = (await m.User.get(id=user_id)).quota
    held = sum(await m.QuotaLease.filter(kind="user", ref_id=user_id).values_list("held", flat=True))
    spent = sum(await m.Log.filter(user_id=user_id).values_list("quota", flat=True))
    return quota, held, spent


async def test_reserve_settle_flush_keeps_the_books(db):
    ledger = QuotaLedger(min_chunk=1000)
    await ledger.start()
    res = await ledger.reserve(db.id, None, 300)
    assert res.settle(120, entry(db.id, 120, "r1"))
    assert not res.settle(120, entry(db.id, 120, "r1"))  # exactly once
    await ledger.flush()
    quota, held, spent = await balance_parts(db.id)
    assert quota + held + spent == INITIAL and spent == 120
    await ledger.stop()
    quota, held, spent = await balance_parts(db.id)
    assert (quota, held) == (INITIAL - 120, 0)


async def test_reservation_beyond_the_balance_is_refused(db):
    ledger = QuotaLedger(min_chunk=1000)
    await ledger.start()
    await ledger.reserve(db.id, None, INITIAL)
    with pytest.raises(InsufficientQuota):
        await ledger.reserve(db.id, None, 1)
    await ledger.stop()


async def test_a_worker_swept_while_alive_neither_loses_nor_double_refunds(db):
    ledger = QuotaLedger(min_chunk=1000)
    await ledger.start()
    ledger._task.cancel()  # flush by hand, so the sweep below cannot race a background flush
    done = await ledger.reserve(db.id, None, 500)
    done.settle(200, entry(db.id, 200, "before"))
    in_flight = await ledger.reserve(db.id, None, 500)
    # the worker looks dead (e.g. a long pause): a sweeper returns its leases
    await m.Worker.filter(id=ledger.worker_id).delete()
    assert await sweep_dead_workers(stale_after=60) == 1
    assert (await m.User.get(id=db.id)).quota == INITIAL  # everything went back, unflushed spend too
    in_flight.settle(300, entry(db.id, 300, "during"))
    await ledger.flush()
    after = await ledger.reserve(db.id, None, 100)  # a fresh lease after re-registering
    after.settle(50, entry(db.id, 50, "after"))
    await ledger.stop()
    quota, held, spent = await balance_parts(db.id)
    assert spent == 550 and held == 0
    assert quota == INITIAL - 550  # charged exactly what the logs say
    assert await m.Worker.filter(id=ledger.worker_id).count() == 0
