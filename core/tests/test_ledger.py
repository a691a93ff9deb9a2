"""The quota ledger's invariants on SQLite, including a worker wrongly swept as dead and
reservations racing a flush that gives a lease back."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from types import SimpleNamespace
from typing import Any

import pytest
from tortoise import Tortoise

from faregate import gateway as gateway_module
from faregate.billing import flushing as flushing_module
from faregate.billing import ledger as ledger_module
from faregate.billing.ledger import InsufficientQuota, LogEntry, QuotaLedger, sweep_dead_workers
from faregate.billing.workers import release_worker
from faregate.db import models as m
from faregate.db import storage
from faregate.default_plugins.storage_sqlite import SQLiteBackend
from faregate.testing.interleave import flush_dying_at_commit

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


class Held:
    """Replaces an awaited ledger call with one that waits for :meth:`release` (and says when it
    was entered): a test decides what happens while the call is in flight."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
        # the flush writes in its own module, the ledger leases in its
        module = flushing_module if name == "write_batch" else ledger_module
        self.real = getattr(module, name)
        self.entered = asyncio.Event()
        self._go = asyncio.Event()
        monkeypatch.setattr(module, name, self)

    async def __call__(self, *args: Any) -> Any:
        self.entered.set()
        await self._go.wait()
        return await self.real(*args)

    def release(self) -> None:
        self._go.set()


async def test_a_reservation_during_a_lease_return_does_not_spend_the_returned_money(db, monkeypatch):
    """A flush giving an idle lease back takes its free part out of memory before its
    transaction: a reservation arriving meanwhile leases anew. Before, it spent the free part
    the transaction was crediting back to the balance (the same money twice)."""
    ledger = QuotaLedger(min_chunk=1000, lease_idle=0)  # every lease not in use is idle
    await ledger.start()
    ledger._task.cancel()  # flush by hand
    first = await ledger.reserve(db.id, None, 300)
    first.settle(100, entry(db.id, 100, "first"))
    write = Held(monkeypatch, "write_batch")
    flush = asyncio.create_task(ledger.flush())
    await write.entered.wait()
    during = await ledger.reserve(db.id, None, 500)
    write.release()
    await flush
    quota, held, spent = await balance_parts(db.id)
    assert quota + held + spent == INITIAL
    assert held >= 500, "the open reservation is covered by what this worker holds"
    assert ledger.leases[("user", db.id)].free >= 0
    during.settle(500, entry(db.id, 500, "during"))
    await ledger.stop()
    quota, held, spent = await balance_parts(db.id)
    assert (quota, held, spent) == (INITIAL - 600, 0, 600)


async def test_a_lease_being_refilled_is_not_forgotten_by_a_flush(db, monkeypatch):
    """A flush that gave a lease back does not drop it from memory while a request refills
    it: the refill lands in that lease, and what the request spends from it is written."""
    ledger = QuotaLedger(min_chunk=1000, lease_idle=0)
    await ledger.start()
    ledger._task.cancel()
    first = await ledger.reserve(db.id, None, 300)
    first.settle(100, entry(db.id, 100, "first"))
    write = Held(monkeypatch, "write_batch")
    flush = asyncio.create_task(ledger.flush())
    await write.entered.wait()  # the lease's free part is on its way back: empty in memory
    refill = Held(monkeypatch, "lease_from_db")
    reserving = asyncio.create_task(ledger.reserve(db.id, None, 500))
    refilling = asyncio.create_task(refill.entered.wait())
    await asyncio.wait([reserving, refilling], return_when=asyncio.FIRST_COMPLETED)
    assert refill.entered.is_set(), "the request refills the lease (under its lock)"
    write.release()
    await flush
    refill.release()
    during = await reserving
    assert during.leases[0] is ledger.leases[("user", db.id)]
    during.settle(200, entry(db.id, 200, "during"))
    await ledger.flush()
    quota, held, spent = await balance_parts(db.id)
    assert quota + held + spent == INITIAL and spent == 300
    await ledger.stop()
    quota, held, spent = await balance_parts(db.id)
    assert (quota, held, spent) == (INITIAL - 300, 0, 300)


async def test_a_chunk_leaves_half_of_a_small_balance_to_other_workers(db):
    """On a balance smaller than two chunks, a worker leases half of it (at least what the
    request needs), so another worker still finds quota in the column."""
    first, second = QuotaLedger(min_chunk=50_000), QuotaLedger(min_chunk=50_000)
    for ledger in (first, second):
        await ledger.start()
    try:
        (await first.reserve(db.id, None, 100)).settle(10, None)
        assert first.leases[("user", db.id)].free == INITIAL // 2 - 10
        (await second.reserve(db.id, None, 100)).settle(10, None)
        assert second.leases[("user", db.id)].free == INITIAL // 4 - 10
        big = await second.reserve(db.id, None, INITIAL // 2)  # beyond the column: the first gives back
        big.refund()
    finally:
        for ledger in (first, second):
            await ledger.stop()
    assert (await m.User.get(id=db.id)).quota == INITIAL - 20


async def test_a_holder_that_never_answers_leads_to_a_refusal_after_the_timeout(db, caplog):
    """A worker that holds the balance but does not answer (dead on another host, not swept
    yet) cannot block a request forever: refused after ``reclaim_timeout``, and logged."""
    silent = QuotaLedger(min_chunk=50_000, worker_id="silent")
    asking = QuotaLedger(min_chunk=50_000, reclaim_timeout=0.3, reclaim_poll=0.05)
    await silent.start()
    await asking.start()
    silent._task.cancel()  # its flush loop, which would answer, is gone
    (await silent.reserve(db.id, None, INITIAL * 3 // 4)).settle(0, None)  # holds 3/4 of the balance, idle
    with pytest.raises(InsufficientQuota):
        await asking.reserve(db.id, None, INITIAL // 2)
    assert "no answer from the workers holding user" in caplog.text
    assert await m.QuotaLease.filter(worker="silent", wanted=True).exists()
    await asking.stop()
    await silent.stop()  # stopping answers too: everything goes back
    assert (await m.User.get(id=db.id)).quota == INITIAL
    assert not await m.QuotaLease.all().exists()


async def test_a_lease_the_database_grants_late_is_a_refusal_then_not_lost(db, monkeypatch):
    """A database that takes too long to grant a lease: the request stops waiting (its 503)
    after ``lease_timeout``, and what the database grants afterwards lands in the worker's lease
    (the books still balance; the next request is served from it)."""
    answer = asyncio.Event()
    real = ledger_module.lease_from_db

    async def slow(*args: Any) -> int:
        await answer.wait()
        return await real(*args)

    monkeypatch.setattr(ledger_module, "lease_from_db", slow)
    ledger = QuotaLedger(min_chunk=1000, lease_timeout=0.05)
    await ledger.start()
    with pytest.raises(ledger_module.LeaseTimeout):
        await ledger.reserve(db.id, None, 300)
    answer.set()
    for _ in range(100):
        await asyncio.sleep(0.01)
        if ledger.leases[("user", db.id)].free:
            break
    lease = ledger.leases[("user", db.id)]
    assert lease.free >= 300 and lease.reserved == 0  # the need and a chunk ahead
    quota, held, spent = await balance_parts(db.id)
    assert (quota + held, held) == (INITIAL, lease.free)
    monkeypatch.setattr(ledger_module, "lease_from_db", real)
    res = await ledger.reserve(db.id, None, 300)  # from the lease that landed
    assert res.settle(300, entry(db.id, 300, "late"))
    await ledger.stop()
    quota, held, spent = await balance_parts(db.id)
    assert (quota, held, spent) == (INITIAL - 300, 0, 300)


@pytest.mark.parametrize("landed", [True, False])
async def test_a_batch_whose_commit_failed_is_written_once(db, monkeypatch, landed):
    """The connection dies around the commit: the batch may have landed (the failure came after
    the commit) or not. The next flush reads which from the database and writes it only if it
    did not land, so the charge is neither doubled nor lost (a unique request id made a rewrite
    fail forever, and the charges queued behind it were lost at the stop)."""
    real = flushing_module.write_batch
    failures = [1]

    async def dying(*args: Any) -> None:
        if landed:
            await real(*args)
        if failures:
            failures.pop()
            raise ConnectionResetError("the server closed the connection")
        if not landed:
            await real(*args)

    monkeypatch.setattr(flushing_module, "write_batch", dying)
    ledger = QuotaLedger(min_chunk=1000)
    await ledger.start()
    res = await ledger.reserve(db.id, None, 300)
    assert res.settle(120, entry(db.id, 120, "doubt"))
    with pytest.raises(ConnectionResetError):
        await ledger.flush()
    later = await ledger.reserve(db.id, None, 300)
    assert later.settle(80, entry(db.id, 80, "later"))
    await ledger.flush()
    await ledger.stop()
    assert sorted(await m.Log.all().values_list("request_id", flat=True)) == ["doubt", "later"]
    quota, held, spent = await balance_parts(db.id)
    assert (quota, held, spent) == (INITIAL - 200, 0, 200)
    assert (await m.User.get(id=db.id)).used_quota == 200


@pytest.mark.parametrize("landed", [True, False])
async def test_a_lease_return_whose_commit_failed_is_credited_once(db, monkeypatch, landed):
    """Issue 29: a flush that only gives a lease back has no log row to look it up by. Its
    connection dies at the commit: before, the return was put back in memory and given back
    again at the next flush, so when the first commit had landed the balance was credited
    twice (and the lease row went negative); then it counted as written, so had it not landed
    the lease row kept the money until the worker stopped. The worker's row now tells (the
    number each flush writes into it): credited once, at once, either way."""

    ledger = QuotaLedger(min_chunk=1000, lease_idle=0)  # every lease not in use goes back
    await ledger.start()
    ledger._task.cancel()  # flush by hand
    res = await ledger.reserve(db.id, None, 300)
    assert res.refund()
    quota, held, _ = await balance_parts(db.id)
    assert held > 0 and quota + held == INITIAL
    failures = flush_dying_at_commit(monkeypatch, landed=landed)
    with pytest.raises(ConnectionResetError):
        await ledger.flush()  # the return only, its commit failed
    assert failures == []
    await ledger.flush()
    assert await balance_parts(db.id) == (INITIAL, 0, 0), "credited once, by this worker"
    await ledger.stop()
    assert await balance_parts(db.id) == (INITIAL, 0, 0)


@pytest.mark.parametrize("landed", [True, False])
async def test_a_charge_without_a_log_row_whose_commit_failed_is_taken_once(db, monkeypatch, landed):
    """A flush with spending and no log row (consume logs off: only the counters and what the
    lease spent) has nothing in the logs to look it up by. Taken as written when its commit
    failed, so had it not landed the lease row kept the spent quota and gave it back to the
    user when the worker stopped: the charge was lost. The worker's row tells now."""
    ledger = QuotaLedger(min_chunk=1000)
    await ledger.start()
    ledger._task.cancel()  # flush by hand
    res = await ledger.reserve(db.id, None, 300)
    assert res.settle(120, None)
    failures = flush_dying_at_commit(monkeypatch, landed=landed)
    with pytest.raises(ConnectionResetError):
        await ledger.flush()
    assert failures == []
    await ledger.flush()
    await ledger.stop()
    user = await m.User.get(id=db.id)
    assert (user.quota, user.used_quota) == (INITIAL - 120, 120)
    assert not await m.QuotaLease.all().exists()


@pytest.mark.parametrize("landed", [True, False])
async def test_a_flush_in_doubt_when_its_worker_was_swept_is_told_by_its_log_row(db, monkeypatch, landed):
    """The worker's row is gone (swept while the database was away): a log row of the batch
    tells whether it landed, and the charge is taken once (the sweeper returned the lease)."""
    ledger = QuotaLedger(min_chunk=1000)
    await ledger.start()
    ledger._task.cancel()  # flush by hand
    res = await ledger.reserve(db.id, None, 300)
    assert res.settle(120, entry(db.id, 120, "doubt"))
    failures = flush_dying_at_commit(monkeypatch, landed=landed)
    with pytest.raises(ConnectionResetError):
        await ledger.flush()
    assert failures == []
    await release_worker(ledger.worker_id)  # swept as dead
    await ledger.flush()
    await ledger.stop()
    assert await m.Log.all().values_list("request_id", flat=True) == ["doubt"]
    user = await m.User.get(id=db.id)
    assert (user.quota, user.used_quota) == (INITIAL - 120, 120)


async def test_each_lease_sweep_runs_in_a_context_of_its_own(monkeypatch):
    """Issue 29: tortoise keeps the current transaction in a context variable, and may leave
    it set when releasing a dead connection raises; the lease sweeper's loop runs each sweep
    in a task of its own (as the ledger's flush), so what one sweep leaves in its context is
    not the next one's."""
    left_behind: contextvars.ContextVar[str] = contextvars.ContextVar("left_behind", default="")
    seen: list[str] = []
    two = asyncio.Event()

    async def sweep(stale_after: float) -> int:
        seen.append(left_behind.get())
        left_behind.set("a dead connection's transaction")
        if len(seen) == 2:
            two.set()
        return 0

    monkeypatch.setattr(gateway_module, "sweep_dead_workers", sweep)
    gateway = SimpleNamespace(settings=SimpleNamespace(sweep_interval=0))
    loop = asyncio.create_task(gateway_module.Gateway._sweep_loop(gateway))  # type: ignore[arg-type]
    await asyncio.wait_for(two.wait(), 10)
    loop.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await loop
    assert seen[:2] == ["", ""]


async def test_a_flush_crosses_to_sqlites_thread_four_times(db, monkeypatch):
    """On SQLite every statement is a call on aiosqlite's thread and back to the event loop;
    a flush's writes nothing reads (the log rows, the used-quota counters, the lease rows)
    go in one call (SQLiteBackend.run_statements): four crossings a flush (the BEGIN, the
    worker's row, the writes, the commit) where each statement was one, and tortoise sent an
    empty COMMIT before each BEGIN (twelve for a user and a key; the worker's row was read
    apart from its heartbeat's update before the update's row count told, five)."""
    import aiosqlite

    token = await m.Token.create(user_id=db.id, key_hash="t" * 64, key_enc="t", key_mask="m", remain_quota=INITIAL)
    channel = await m.Channel.create(name="c")
    crossings: list[str] = []
    real = aiosqlite.Connection._execute

    async def counted(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        crossings.append(getattr(fn, "__name__", repr(fn)))
        return await real(self, fn, *args, **kwargs)

    backend = SQLiteBackend(name="sqlite", schemes=("sqlite",))
    # the other workers' asks are read at most every reclaim_poll: here once, before counting
    ledger = QuotaLedger(min_chunk=1000, flush_interval=60, reclaim_poll=60, run_statements=backend.run_statements)
    await ledger.start()
    try:
        assert (await ledger.reserve(db.id, token.id, 100)).refund()  # the leases taken
        await ledger.flush()
        for i in range(3):
            res = await ledger.reserve(db.id, token.id, 100)
            one = entry(db.id, 50, f"r{i}")
            one.token_id = token.id
            assert res.settle(50, one, channel.id)
        monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
        await ledger.flush()
        monkeypatch.undo()
        assert crossings == ["execute", "_execute_fetchall", "_run_all", "commit"]
        assert await m.Log.filter(user_id=db.id).count() == 3
        assert ((await m.Token.get(id=token.id)).used_quota, (await m.Channel.get(id=channel.id)).used_quota) \
            == (150, 150)
    finally:
        await ledger.stop()
    quota, held, spent = await balance_parts(db.id)
    assert (quota, held, spent) == (INITIAL - 150, 0, 150)


async def test_a_balance_read_while_a_flush_lands_counts_the_spent_quota_once(db, monkeypatch):
    """Services.balance (a key's quota for /dashboard/billing/subscription, a user's for the
    console) adds what the leases hold to the row's balance. Read as two statements, a flush
    landing between them (spent quota moved out of the lease row into ``used_quota``) was
    counted twice: remaining + used came out above what the key was given."""
    from faregate.services import Services
    from faregate.testing.interleave import after_select

    token = await m.Token.create(user_id=db.id, key_hash="b" * 64, key_enc="b", key_mask="m", remain_quota=INITIAL)
    ledger = QuotaLedger(min_chunk=1000, flush_interval=60)
    await ledger.start()
    services = Services(SimpleNamespace(ledger=ledger))  # type: ignore[arg-type]
    try:
        res = await ledger.reserve(db.id, token.id, 100)
        spent = entry(db.id, 40, "read-1")
        spent.token_id = token.id
        assert res.settle(40, spent)  # settled, not yet flushed: still in the lease rows
        flushes = after_select(monkeypatch, ledger.flush)  # one flush, right after the read's first statement
        for kind, ref in (("token", token.id), ("user", db.id)):
            flushes[:] = [ledger.flush]
            balance = await services.balance(kind, ref)
            assert not flushes, "the flush ran during the read"
            # before the flush or after it, never half of each: the spent quota counted once
            assert balance is not None and balance.remaining + balance.used == INITIAL, (kind, balance)
            settled = await ledger.reserve(db.id, token.id, 100)  # more spent for the next kind's read
            more = entry(db.id, 0, f"read-{kind}")
            more.token_id = token.id
            assert settled.settle(0, more)
        monkeypatch.undo()
    finally:
        await ledger.stop()
