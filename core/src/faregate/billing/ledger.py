"""Exact, fast quota accounting: leases taken atomically from the database, spent
from memory, flushed in batches.

Invariants (tested in core/tests/test_ledger.py on SQLite, and on every storage engine by
the storage conformance suite, :mod:`faregate.testing.conformance`; tests/test_relay_openai.py,
tests/test_multiworker.py and tests/test_scale_out.py cover them through the relay):

* A reservation never spends more than the database granted: a worker takes quota
  out of ``users.quota`` / ``tokens.remain_quota`` with one conditional UPDATE
  (``… WHERE quota >= :n``) and records the lease in ``quota_leases`` in the same
  transaction. Reserving from a lease is an in-memory subtraction with no await, so
  concurrent requests in a worker cannot both pass a check.
* Each request settles exactly once (``Reservation.settle``/``refund`` are idempotent
  and synchronous, so a cancelled request — a client that went away — still settles
  in its ``finally``).
* Logs, used-quota counters and lease balances reach the database together, in one
  transaction per flush, so they never disagree. A crash loses at most the logs and
  charges settled since the last commit, i.e. one flush interval plus the flush in
  progress (measured in docs/operations.md; the user is refunded, never overcharged):
  a sweeper returns the leases of workers whose heartbeat stopped, or at once those of
  a worker on this machine whose process is gone (:mod:`faregate.billing.workers`).
* Overspend is bounded: settle may charge more than was reserved (the model wrote
  more than estimated) only from the lease; the balance can dip below zero by at most
  one request's excess.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from tortoise.expressions import F
from tortoise.transactions import in_transaction

from faregate.billing.log_rows import log_row
from faregate.billing.workers import new_worker_id
from faregate.billing.workers import sweep_dead_workers as sweep_dead_workers  # its home before
from faregate.db import models as m

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from tortoise.backends.base.client import BaseDBAsyncClient
    from tortoise.models import Model

    from faregate.contracts import UsageRecorder

log = logging.getLogger("faregate.billing")


class InsufficientQuota(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind  # "user" or "token"


@dataclass(slots=True)
class Lease:
    kind: str
    ref_id: int
    free: int = 0  # leased and not reserved
    reserved: int = 0  # held by in-flight requests
    consumed_unflushed: int = 0  # spent, not yet written to the database
    last_used: float = 0.0
    # the sweeper took this worker for dead and already returned the lease's money:
    # what it still sees spent is charged to the balance directly, nothing is returned
    orphaned: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


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


class _Swept(Exception):
    """This worker's row is gone: a sweeper returned its leases."""


# ---- the balances leases draw from ----------------------------------------------------
# The one place that tells a user lease from a token lease: everything else passes the
# lease's kind ("user" or "token") through.


def _balance(kind: str) -> tuple[type[Model], str]:
    """The table and column a lease of ``kind`` draws its quota from."""
    return (m.User, "quota") if kind == "user" else (m.Token, "remain_quota")


async def _take_from_balance(kind: str, ref_id: int, amount: int, conn: BaseDBAsyncClient, *,
                             only_if_covered: bool = False) -> int:
    """Subtract ``amount`` from the balance; with ``only_if_covered``, only when it holds
    at least that much (one conditional UPDATE). Returns how many rows changed (0 or 1)."""
    model, column = _balance(kind)
    where: dict[str, Any] = {"id": ref_id}
    if only_if_covered:
        where[f"{column}__gte"] = amount
    return await model.filter(**where).using_db(conn).update(**{column: F(column) - amount})


async def _return_to_balance(kind: str, ref_id: int, amount: int, conn: BaseDBAsyncClient) -> None:
    """Give ``amount`` back to the balance (a returned or swept lease)."""
    model, column = _balance(kind)
    await model.filter(id=ref_id).using_db(conn).update(**{column: F(column) + amount})


class Reservation:
    __slots__ = ("ledger", "user_id", "token_id", "amount", "settled", "leases")

    def __init__(self, ledger: QuotaLedger, user_id: int, token_id: int | None, amount: int,
                 leases: list[Lease]) -> None:
        self.ledger = ledger
        self.user_id = user_id
        self.token_id = token_id
        self.amount = amount
        self.settled = False
        self.leases = leases  # the leases the amount came from (settles go back to them)

    def settle(self, actual: int, entry: LogEntry | None, channel_id: int = 0) -> bool:
        """Charge ``actual`` (the reservation is released) and queue the log row.
        Returns False if this reservation was already settled."""
        if self.settled:
            return False
        self.settled = True
        self.ledger._settle(self, actual, entry, channel_id)
        return True

    def refund(self, entry: LogEntry | None = None) -> bool:
        return self.settle(0, entry)


class QuotaLedger:
    def __init__(self, *, flush_interval: float = 0.05, lease_idle: float = 5.0,
                 min_chunk: int = 50_000, worker_id: str | None = None) -> None:
        self.worker_id = worker_id or new_worker_id()
        self.flush_interval = flush_interval
        self.lease_idle = lease_idle
        self.min_chunk = min_chunk
        self.leases: dict[tuple[str, int], Lease] = {}
        self._logs: list[LogEntry] = []
        self._user_usage: dict[int, list[int]] = {}  # id -> [quota, requests]
        self._token_usage: dict[int, int] = {}
        self._channel_usage: dict[int, int] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None
        self._flush_lock = asyncio.Lock()
        self._orphans: list[Lease] = []
        self.recorders: list[UsageRecorder] = []
        #: told, after each flush that wrote charges, which users were charged (quota warnings)
        self.watchers: list[Callable[[Iterable[int]], None]] = []
        self.open_reservations = 0  # reserved, not yet settled (the metrics read these)
        self.reserved_quota = 0

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        await m.Worker.create(id=self.worker_id, heartbeat=int(time.time()))
        self._task = asyncio.create_task(self._flush_loop(), name="ledger-flush")

    async def stop(self) -> None:
        if self._task is not None:
            # never cancel the loop in the middle of a flush's transaction
            async with self._flush_lock:
                self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        # settle what is pending and give every lease back
        await self.flush(return_all=True)
        await m.Worker.filter(id=self.worker_id).delete()

    # -- reserving ---------------------------------------------------------------------
    async def reserve(self, user_id: int, token_id: int | None, amount: int) -> Reservation:
        amount = max(0, int(amount))
        leases: list[Lease] = []
        if amount:
            if token_id is not None:
                leases.append(await self._take("token", token_id, amount))
            try:
                leases.append(await self._take("user", user_id, amount))
            except BaseException:  # insufficient, a database error, or cancellation
                for lease in leases:
                    lease.reserved -= amount
                    lease.free += amount
                raise
        self.open_reservations += 1
        self.reserved_quota += amount
        return Reservation(self, user_id, token_id, amount, leases)

    async def _take(self, kind: str, ref_id: int, amount: int) -> Lease:
        key = (kind, ref_id)
        lease = self.leases.get(key)
        if lease is None:
            lease = self.leases[key] = Lease(kind, ref_id)
        lease.last_used = time.monotonic()
        if lease.free >= amount:  # the hot path: no await between check and spend
            lease.free -= amount
            lease.reserved += amount
            return lease
        async with lease.lock:
            while lease.free < amount:
                need = amount - lease.free
                # shielded: a client that goes away must not cancel a transaction half-way
                # (tortoise's SQLite lock would stay taken); the lease lands in memory anyway
                got = await asyncio.shield(self._lease_into(lease, max(need, self.min_chunk, amount * 4)))
                if not got:
                    got = await asyncio.shield(self._lease_into(lease, need))
                if not got:
                    raise InsufficientQuota(kind)
            lease.free -= amount
            lease.reserved += amount
            return lease

    async def _lease_into(self, lease: Lease, amount: int) -> int:
        got = await self._lease_from_db(lease.kind, lease.ref_id, amount)
        lease.free += got
        return got

    async def _lease_from_db(self, kind: str, ref_id: int, amount: int) -> int:
        async with in_transaction() as conn:
            if not await _take_from_balance(kind, ref_id, amount, conn, only_if_covered=True):
                return 0
            updated = await m.QuotaLease.filter(worker=self.worker_id, kind=kind, ref_id=ref_id).using_db(
                conn).update(held=F("held") + amount)
            if not updated:
                await m.QuotaLease.create(worker=self.worker_id, kind=kind, ref_id=ref_id, held=amount,
                                          using_db=conn)
        return amount

    # -- settling (synchronous: safe inside ``finally`` of a cancelled task) ------------
    def _settle(self, res: Reservation, actual: int, entry: LogEntry | None, channel_id: int) -> None:
        actual = max(0, int(actual))
        self.open_reservations -= 1
        self.reserved_quota -= res.amount
        leases = res.leases
        if not leases and actual:  # nothing was reserved (a free price) yet something is owed
            leases = [self.leases.setdefault((kind, ref), Lease(kind, ref))
                      for kind, ref in (("token", res.token_id), ("user", res.user_id)) if ref is not None]
        for lease in leases:
            lease.reserved -= res.amount
            lease.free += res.amount - actual  # may go negative: bounded overdraft
            lease.consumed_unflushed += actual
            lease.last_used = time.monotonic()
        if actual or entry is not None:
            usage = self._user_usage.setdefault(res.user_id, [0, 0])
            usage[0] += actual
            usage[1] += 1 if entry is not None and entry.type == m.LOG_CONSUME else 0
            if res.token_id is not None:
                self._token_usage[res.token_id] = self._token_usage.get(res.token_id, 0) + actual
            if channel_id:
                self._channel_usage[channel_id] = self._channel_usage.get(channel_id, 0) + actual
        if entry is not None:
            entry.created_at = entry.created_at or int(time.time())
            self._logs.append(entry)
        self._wake.set()

    @property
    def queued_logs(self) -> int:
        """Log rows waiting for the next flush."""
        return len(self._logs)

    # -- flushing ----------------------------------------------------------------------
    async def _flush_loop(self) -> None:
        last_beat = 0.0
        while True:
            # not wait_for: on 3.11 it swallows a cancel that races the wake-up (a
            # settle right before stop()), and stop() then waits forever
            try:
                async with asyncio.timeout(1.0):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.flush()
                now = time.monotonic()
                if now - last_beat > 2.0:
                    last_beat = now
                    async with self._flush_lock:  # stop() cancels only outside this lock
                        await m.Worker.filter(id=self.worker_id).update(heartbeat=int(time.time()))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("billing flush failed; retrying")
            await asyncio.sleep(self.flush_interval)

    async def flush(self, return_all: bool = False) -> None:
        async with self._flush_lock:
            if await self._flush_once(return_all):
                # we were swept: everything pending is back in place and orphaned; retry
                await m.Worker.update_or_create(id=self.worker_id, defaults={"heartbeat": int(time.time())})
                await self._flush_once(return_all)

    def _requeue(self, logs: list[LogEntry], users: dict[int, list[int]], tokens: dict[int, int],
                 channels: dict[int, int]) -> None:
        """Put a failed flush's rows back so the next flush writes them; nothing is lost."""
        self._logs[:0] = logs
        for uid, (q, n) in users.items():
            cur = self._user_usage.setdefault(uid, [0, 0])
            cur[0] += q
            cur[1] += n
        for tid, q in tokens.items():
            self._token_usage[tid] = self._token_usage.get(tid, 0) + q
        for cid, q in channels.items():
            self._channel_usage[cid] = self._channel_usage.get(cid, 0) + q

    async def _flush_once(self, return_all: bool) -> bool:
        """Write what is pending in one transaction; True if this worker had been swept."""
        logs, self._logs = self._logs, []
        users, self._user_usage = self._user_usage, {}
        tokens, self._token_usage = self._token_usage, {}
        channels, self._channel_usage = self._channel_usage, {}
        now = time.monotonic()
        consumed: list[tuple[Lease, int]] = []
        returning: list[tuple[Lease, int]] = []
        for lease in [*self.leases.values(), *self._orphans]:
            if lease.consumed_unflushed:
                consumed.append((lease, lease.consumed_unflushed))
            if not lease.orphaned and lease.reserved == 0 and not lease.lock.locked() and (
                    return_all or now - lease.last_used > self.lease_idle):
                returning.append((lease, lease.free))
        if not (logs or users or tokens or channels or consumed or returning):
            return False
        try:
            await self._write(logs, users, tokens, channels, consumed, returning)
        except _Swept:
            self._requeue(logs, users, tokens, channels)
            log.error("worker %s was swept as dead while alive; re-registering", self.worker_id)
            for lease in self.leases.values():  # their money went back to the balances
                lease.orphaned = True
                lease.free = 0
                self._orphans.append(lease)
            self.leases = {}
            return True
        except Exception:
            self._requeue(logs, users, tokens, channels)
            raise
        for lease, amount in consumed:
            lease.consumed_unflushed -= amount
        for lease, amount in returning:
            lease.free -= amount
            if lease.free == 0 and lease.reserved == 0 and lease.consumed_unflushed == 0:
                self.leases.pop((lease.kind, lease.ref_id), None)
        self._orphans = [o for o in self._orphans if o.reserved or o.consumed_unflushed]
        if users:
            for watcher in self.watchers:
                try:
                    watcher(list(users))
                except Exception:
                    log.exception("ledger watcher %r failed", watcher)
        for recorder in self.recorders:
            for entry in logs:
                try:
                    result = recorder.record(entry)
                    if asyncio.iscoroutine(result):
                        await result
                except Exception:
                    log.exception("usage recorder %r failed", recorder)
        return False

    async def _write(self, logs: list[LogEntry], users: dict[int, list[int]], tokens: dict[int, int],
                     channels: dict[int, int], consumed: list[tuple[Lease, int]],
                     returning: list[tuple[Lease, int]]) -> None:
        async with in_transaction() as conn:
            # exists(), not the UPDATE's row count: MySQL counts only rows whose value changed
            if not await m.Worker.filter(id=self.worker_id).using_db(conn).exists():
                raise _Swept
            await m.Worker.filter(id=self.worker_id).using_db(conn).update(heartbeat=int(time.time()))
            # an orphan's spending was never subtracted (its lease money went back): charge it now
            for lease, amount in consumed:
                if lease.orphaned and amount:
                    await _take_from_balance(lease.kind, lease.ref_id, amount, conn)
            consumed = [(lease, amount) for lease, amount in consumed if not lease.orphaned]
            if logs:
                await m.Log.bulk_create([log_row(e) for e in logs], using_db=conn)
            for uid, (quota, count) in users.items():
                await m.User.filter(id=uid).using_db(conn).update(
                    used_quota=F("used_quota") + quota, request_count=F("request_count") + count)
            stamp = int(time.time())
            for tid, quota in tokens.items():
                await m.Token.filter(id=tid).using_db(conn).update(
                    used_quota=F("used_quota") + quota, accessed_time=stamp)
            for cid, quota in channels.items():
                await m.Channel.filter(id=cid).using_db(conn).update(used_quota=F("used_quota") + quota)
            # the lease row shrinks by what was spent; returned leases go back to the balance
            spent: dict[tuple[str, int], int] = {}
            for lease, amount in consumed:
                spent[(lease.kind, lease.ref_id)] = amount
            back = {(lease.kind, lease.ref_id): amount for lease, amount in returning}
            for key in set(spent) | set(back):
                kind, ref = key
                delta = spent.get(key, 0) + back.get(key, 0)
                await m.QuotaLease.filter(worker=self.worker_id, kind=kind, ref_id=ref).using_db(conn).update(
                    held=F("held") - delta)
                if key in back and back[key]:
                    await _return_to_balance(kind, ref, back[key], conn)
            await m.QuotaLease.filter(worker=self.worker_id, held=0).using_db(conn).delete()

    # -- reading -----------------------------------------------------------------------
    async def held_for(self, kind: str, ref_id: int) -> int:
        """Quota leased out of this balance by all workers (still the owner's money)."""
        # tortoise types values_list(flat=True) as a list of tuples; flat, it is the values
        rows = cast("list[int]", await m.QuotaLease.filter(kind=kind, ref_id=ref_id).values_list("held", flat=True))
        return int(sum(rows))
