"""What the ledger owes the database between flushes: the log rows settled, the
used-quota counters of users, keys and channels, and the one transaction that writes them
together with the lease balances, so they never disagree. A failed write puts its batch
back for the next flush: nothing is lost but what a crash takes (what was settled since the
last commit: the flush interval plus one or two commits, see docs/operations.md)."""

from __future__ import annotations

import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from tortoise.expressions import F
from tortoise.transactions import in_transaction

from faregate.billing.leases import Lease, return_to_balance, take_from_balance
from faregate.billing.log_rows import log_insert
from faregate.billing.statements import Statement, StatementBatch, StatementRunner
from faregate.db import models as m
from faregate.db.backend import run_each


@dataclass(slots=True)
class LogEntry:
    """One consume/error log row; the ``record`` hooks receive it too."""

    user_id: int
    username: str
    token_id: int
    token_name: str
    model_name: str
    quota: int
    prompt_tokens: int
    completion_tokens: int
    use_time: int
    is_stream: bool
    channel_id: int
    group: str
    request_id: str
    type: int = m.LOG_CONSUME
    content: str = ""
    ip: str = ""
    other: dict[str, Any] = field(default_factory=dict)
    created_at: int = 0


class UsageRecorder(Protocol):
    """``record(entry)`` receives every finished request's log entry
    (:class:`faregate.billing.ledger.LogEntry`) at the ledger's next flush. May be
    ``async def`` (the ledger awaits a coroutine it returns); errors are logged, never
    propagated."""

    def record(self, entry: LogEntry) -> Coroutine[Any, Any, None] | None: ...


class Swept(Exception):
    """This worker's row is gone: a sweeper returned its leases."""


@dataclass(slots=True)
class Batch:
    """Settled and not yet written: the rows and the counters' increments."""

    logs: list[LogEntry] = field(default_factory=list)
    users: dict[int, list[int]] = field(default_factory=dict)  # id -> [quota, requests]
    tokens: dict[int, int] = field(default_factory=dict)
    channels: dict[int, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.logs or self.users or self.tokens or self.channels)


class PendingWrites:
    """The batch being filled by settles (synchronous: no await) until a flush takes it."""

    __slots__ = ("batch",)

    def __init__(self) -> None:
        self.batch = Batch()

    def add(self, user_id: int, token_id: int | None, channel_id: int, actual: int, entry: LogEntry | None) -> None:
        batch = self.batch
        if actual or entry is not None:
            usage = batch.users.setdefault(user_id, [0, 0])
            usage[0] += actual
            usage[1] += 1 if entry is not None and entry.type == m.LOG_CONSUME else 0
            if token_id is not None:
                batch.tokens[token_id] = batch.tokens.get(token_id, 0) + actual
            if channel_id:
                batch.channels[channel_id] = batch.channels.get(channel_id, 0) + actual
        if entry is not None:
            entry.created_at = entry.created_at or int(time.time())
            batch.logs.append(entry)

    def take(self) -> Batch:
        batch, self.batch = self.batch, Batch()
        return batch

    def requeue(self, failed: Batch) -> None:
        """Put a failed flush's rows back, before what came since: the next flush writes them."""
        batch = self.batch
        batch.logs[:0] = failed.logs
        for uid, (q, n) in failed.users.items():
            cur = batch.users.setdefault(uid, [0, 0])
            cur[0] += q
            cur[1] += n
        for tid, q in failed.tokens.items():
            batch.tokens[tid] = batch.tokens.get(tid, 0) + q
        for cid, q in failed.channels.items():
            batch.channels[cid] = batch.channels.get(cid, 0) + q


async def write_batch(worker_id: str, number: int, batch: Batch, consumed: list[tuple[Lease, int]],
                      returning: list[tuple[Lease, int]], answered: set[tuple[str, int]] | None = None,
                      run_statements: StatementRunner = run_each) -> None:
    """One transaction: the log rows, the used-quota counters, what each lease spent and
    what goes back to the balances; the asks of ``answered`` leases are cleared (what they
    give back is in ``returning``); the worker's row records the flush's ``number`` (above
    any earlier one: ``workers.flushed``, read when the commit fails). The writes nothing reads go to the
    storage engine together (``run_statements``, its ``StorageBackend.run_statements``).
    Raises :class:`Swept` when the worker was swept; any other error may have come after the
    commit (the connection died around it): ``workers.flushed`` tells whether it landed."""
    answered = answered or set()
    async with in_transaction() as conn:
        # the worker's row first: held until the commit, so a read of it after a failed commit
        # waits for the server to finish. It changes on every engine (``number`` is new), so
        # the row count tells whether it is there (MySQL counts only rows whose value changed)
        if not await _HEARTBEAT.run(conn, int(time.time()), number, worker_id):
            raise Swept
        # an orphan's spending was never subtracted (its lease money went back): charge it
        # now (rare, run at once: every write here adds to or takes from its own row, so
        # their order within the transaction does not matter)
        for lease, amount in consumed:
            if lease.orphaned and amount:
                await take_from_balance(lease.kind, lease.ref_id, amount, conn)
        consumed = [(lease, amount) for lease, amount in consumed if not lease.orphaned]
        writes = StatementBatch(conn, run_statements)
        if batch.logs:
            writes.add_sql(*log_insert(batch.logs, conn))
        if batch.users:
            await writes.add_many(_USER_USED, [(quota, count, uid) for uid, (quota, count) in batch.users.items()])
        stamp = int(time.time())
        if batch.tokens:
            await writes.add_many(_TOKEN_USED, [(quota, stamp, tid) for tid, quota in batch.tokens.items()])
        if batch.channels:
            await writes.add_many(_CHANNEL_USED, [(quota, cid) for cid, quota in batch.channels.items()])
        # the lease row shrinks by what was spent; returned leases go back to the balance
        spent: dict[tuple[str, int], int] = {}
        for lease, amount in consumed:
            spent[(lease.kind, lease.ref_id)] = amount
        back = {(lease.kind, lease.ref_id): amount for lease, amount in returning}
        for key in set(spent) | set(back) | answered:
            kind, ref = key
            delta = spent.get(key, 0) + back.get(key, 0)
            await writes.add(_LEASE_ANSWERED if key in answered else _LEASE_SPENT, delta, worker_id, kind, ref)
            if key in back and back[key]:
                await return_to_balance(kind, ref, back[key], conn)
        await writes.add(_EMPTY_LEASES, worker_id)  # after the lease rows' updates above
        await writes.run()


# the flush's statements, their SQL made once per connection (faregate.billing.statements)
_HEARTBEAT = Statement(lambda conn, beat, number, worker: m.Worker.filter(id=worker).using_db(conn).update(
    heartbeat=beat, flushed=number), "iis")
_USER_USED = Statement(lambda conn, quota, count, uid: m.User.filter(id=uid).using_db(conn).update(
    used_quota=F("used_quota") + quota, request_count=F("request_count") + count), "iii")
_TOKEN_USED = Statement(lambda conn, quota, stamp, tid: m.Token.filter(id=tid).using_db(conn).update(
    used_quota=F("used_quota") + quota, accessed_time=stamp), "iii")
_CHANNEL_USED = Statement(lambda conn, quota, cid: m.Channel.filter(id=cid).using_db(conn).update(
    used_quota=F("used_quota") + quota), "ii")
_LEASE_SPENT = Statement(lambda conn, delta, worker, kind, ref: m.QuotaLease.filter(
    worker=worker, kind=kind, ref_id=ref).using_db(conn).update(held=F("held") - delta), "issi")
_LEASE_ANSWERED = Statement(lambda conn, delta, worker, kind, ref: m.QuotaLease.filter(
    worker=worker, kind=kind, ref_id=ref).using_db(conn).update(held=F("held") - delta, wanted=False), "issi")
_EMPTY_LEASES = Statement(lambda conn, worker: m.QuotaLease.filter(worker=worker, held=0).using_db(conn).delete(), "s")
