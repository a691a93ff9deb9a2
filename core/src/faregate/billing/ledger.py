"""Exact, fast quota accounting: leases taken atomically from the database
(:mod:`faregate.billing.leases`), spent from memory here, flushed in batches
(:mod:`faregate.billing.pending`, :mod:`faregate.billing.flushing`).

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
  transaction per flush, so they never disagree. A crash loses the logs and charges
  settled since the last commit: flushes start at most every flush interval, so at most
  the interval (or the flush in progress, if longer) plus one commit (measured in
  docs/operations.md and tests/faults/test_crash_durability.py; the user is refunded, never overcharged):
  a sweeper returns the leases of workers whose heartbeat stopped, or at once those of
  a worker on this machine whose process is gone (:mod:`faregate.billing.workers`).
* Overspend is bounded: a request reserves what it can be billed (its output bound and its
  prompt's, :mod:`faregate.exchange.admission`); settle may charge more than was reserved
  (input the upstream added, which the gateway cannot see) only from the lease, and the
  balance dips below zero by that excess.
* How a balance is split between workers never refuses a request the balance as a whole
  can pay: a chunk takes at most half of the balance, and a worker still short asks the
  other holders to give back what they have not reserved (:meth:`QuotaLedger._reclaim`;
  tests/test_quota_across_workers.py with 2 workers and 2 nodes).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from tortoise.exceptions import OperationalError

from faregate.billing.flushing import Flush, FlushWriter, gather
from faregate.billing.leases import InsufficientQuota, Lease, ask_back, asked_back, holders, lease_from_db, read_balance
from faregate.billing.pending import LogEntry, PendingWrites, Swept
from faregate.billing.statements import StatementRunner
from faregate.billing.workers import new_worker_id
from faregate.billing.workers import sweep_dead_workers as sweep_dead_workers  # its home before
from faregate.db import models as m
from faregate.db.backend import run_each

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from faregate.billing.pending import UsageRecorder

__all__ = ["InsufficientQuota", "Lease", "LeaseTimeout", "LogEntry", "QuotaLedger", "Reservation",
           "sweep_dead_workers"]

log = logging.getLogger("faregate.billing")


class LeaseTimeout(Exception):
    """The database did not answer a lease in time (the request is answered 503)."""


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
                 min_chunk: int = 50_000, worker_id: str | None = None, reclaim_poll: float = 0.1,
                 reclaim_timeout: float = 10.0, lease_timeout: float = 10.0,
                 run_statements: StatementRunner = run_each) -> None:
        self.worker_id = worker_id or new_worker_id()
        self.flush_interval = flush_interval
        self.lease_idle = lease_idle
        self.min_chunk = min_chunk
        #: how often a worker holding leases looks whether another worker asked for them back
        self.reclaim_poll = reclaim_poll
        #: how long a worker short of a balance waits for the other holders to answer
        self.reclaim_timeout = reclaim_timeout
        #: how long a request waits for the database to grant a lease before its 503
        self.lease_timeout = lease_timeout
        self.leases: dict[tuple[str, int], Lease] = {}
        self._pending = PendingWrites()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None
        self._flush_lock = asyncio.Lock()
        self._orphans: list[Lease] = []
        #: writes each flush once (a batch whose commit failed is held aside there)
        #: the flush's writes go through the storage engine's StorageBackend.run_statements
        self._writer = FlushWriter(self.worker_id, self._pending, run_statements)
        self._asks_read = 0.0  # when (monotonic) this worker last read other workers' asks
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
            # a chunk ahead, unless another worker was short of this balance lately
            ahead = 0 if time.monotonic() - lease.given_back < self.lease_idle else max(self.min_chunk, amount * 4)
            if lease.free < amount:
                await self._lease_into(lease, amount - lease.free, ahead)
            # short still (or again: requests served from the lease meanwhile, no lock needed)
            if lease.free < amount and not await self._reclaim(lease, amount):
                raise InsufficientQuota(kind)
            lease.free -= amount
            lease.reserved += amount
            return lease

    async def _lease_into(self, lease: Lease, need: int, ahead: int = 0) -> int:
        # shielded: a client that goes away must not cancel a transaction half-way (tortoise's
        # SQLite lock would stay taken), and the request stops waiting after lease_timeout (a
        # database that accepts connections but does not answer would hold it until the client
        # gives up): the lease lands in memory when the transaction ends, whoever still waits
        taking = asyncio.ensure_future(lease_from_db(self.worker_id, lease.kind, lease.ref_id, need, ahead))

        def landed(done: asyncio.Future[int]) -> None:
            if not done.cancelled() and done.exception() is None:
                lease.free += done.result()

        taking.add_done_callback(landed)  # before shield's own: credited before the caller resumes
        try:
            async with asyncio.timeout(self.lease_timeout):
                return await asyncio.shield(taking)
        except TimeoutError:
            raise LeaseTimeout(f"the database did not grant a {lease.kind} lease within "
                               f"{self.lease_timeout:g} s") from None

    async def _reclaim(self, lease: Lease, amount: int) -> bool:
        """The balance's column alone cannot cover ``amount``: ask the other workers holding
        it to give back what they have not reserved (they do at their next flush, within
        ``reclaim_poll``), then take the shortfall. False when the balance as a whole cannot
        pay: the column and the other leases together fall short, or every holder answered
        (twice) and what they still hold is reserved by their own requests in flight; or when
        a holder did not answer within ``reclaim_timeout`` (a worker that died on another host
        and is not swept yet)."""
        deadline = time.monotonic() + self.reclaim_timeout
        asked, answered_rounds = False, 0
        while lease.free < amount:
            need = amount - lease.free
            seen = await holders(self.worker_id, lease.kind, lease.ref_id)
            if seen.balance + seen.held_elsewhere < need:
                return False
            if seen.balance >= need and await self._lease_into(lease, need):
                continue  # given back (a holder's answer returns its part in the same commit)
            if asked and not seen.unanswered:  # every holder answered, and the column falls short
                answered_rounds += 1
                if answered_rounds == 2:
                    return False
                asked = False  # once more: an answer may have been computed just before the ask
            if time.monotonic() > deadline:
                log.warning("no answer from the workers holding %s %d's quota within %.0f s; refused",
                            lease.kind, lease.ref_id, self.reclaim_timeout)
                return False
            if not asked:
                try:
                    await asyncio.shield(ask_back(self.worker_id, lease.kind, lease.ref_id))
                    asked = True
                except OperationalError:  # a deadlock, say: asked again next round (an outage fails above)
                    log.debug("asking back %s %d failed; retrying", lease.kind, lease.ref_id, exc_info=True)
            await asyncio.sleep(self.reclaim_poll / 2)
        return True

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
        self._pending.add(res.user_id, res.token_id, channel_id, actual, entry)
        self._wake.set()

    @property
    def queued_logs(self) -> int:
        """Log rows waiting for the next flush."""
        return len(self._pending.batch.logs)

    # -- flushing ----------------------------------------------------------------------
    async def _flush_loop(self) -> None:
        last_beat = 0.0
        while True:
            # not wait_for: on 3.11 it swallows a cancel that races the wake-up (a
            # settle right before stop()), and stop() then waits forever. While this worker
            # holds leases, the flush also answers other workers asking for them back: it
            # runs at least every reclaim_poll
            try:
                async with asyncio.timeout(self.reclaim_poll if self.leases else 1.0):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            started = time.monotonic()
            try:
                # a task (a context) of its own: when a connection dies under a transaction,
                # tortoise may leave that transaction set in the task's context (its release
                # raised before the reset), and every later query of the task would use it
                await asyncio.ensure_future(self.flush())
                now = time.monotonic()
                if now - last_beat > 2.0:
                    last_beat = now
                    async with self._flush_lock:  # stop() cancels only outside this lock
                        await m.Worker.filter(id=self.worker_id).update(heartbeat=int(time.time()))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("billing flush failed; retrying")
            # the interval runs from the flush's start, not its end: a charge settled during a
            # flush waits at most the interval (or that flush, if longer), then its own commit
            await asyncio.sleep(max(0.0, self.flush_interval - (time.monotonic() - started)))

    async def flush(self, return_all: bool = False) -> None:
        async with self._flush_lock:
            if await self._flush_once(return_all):
                # we were swept: everything pending is back in place and orphaned; retry
                await m.Worker.update_or_create(id=self.worker_id, defaults={"heartbeat": int(time.time())})
                await self._flush_once(return_all)

    async def _flush_once(self, return_all: bool) -> bool:
        """Write what is pending in one transaction (:mod:`faregate.billing.flushing`); True
        if this worker had been swept."""
        # looked up once per reclaim_poll, not per flush (a busy worker flushes every interval),
        # and before the batch is taken: what is settled meanwhile still goes in this flush
        asked: set[tuple[str, int]] = set()
        if self.leases and (return_all or time.monotonic() - self._asks_read >= self.reclaim_poll):
            self._asks_read = time.monotonic()
            asked = await asked_back(self.worker_id)
        if self._writer.in_doubt is not None:
            landed = await self._writer.resolve()
            if landed is not None:
                await self._written(landed)
        flush = gather(self._pending.take(), [*self.leases.values(), *self._orphans], asked,
                       lease_idle=self.lease_idle, return_all=return_all)
        if not flush:
            return False
        try:
            await self._writer.write(flush)
        except Swept:
            log.error("worker %s was swept as dead while alive; re-registering", self.worker_id)
            for lease in self.leases.values():  # their money went back to the balances
                lease.orphaned = True
                lease.free = 0
                self._orphans.append(lease)
            self.leases = {}
            return True
        await self._written(flush)
        return False

    async def _written(self, flush: Flush) -> None:
        for lease, amount in flush.consumed:
            lease.consumed_unflushed -= amount
        for lease, _ in flush.returning:
            # a lease being refilled (its lock taken) stays: the refill lands in this object
            if (lease.free == 0 and lease.reserved == 0 and lease.consumed_unflushed == 0
                    and not lease.lock.locked()):
                self.leases.pop((lease.kind, lease.ref_id), None)
        self._orphans = [o for o in self._orphans if o.reserved or o.consumed_unflushed]
        if flush.batch.users:
            for watcher in self.watchers:
                try:
                    watcher(list(flush.batch.users))
                except Exception:
                    log.exception("ledger watcher %r failed", watcher)
        for recorder in self.recorders:
            for entry in flush.batch.logs:
                try:
                    result = recorder.record(entry)
                    if asyncio.iscoroutine(result):
                        await result
                except Exception:
                    log.exception("usage recorder %r failed", recorder)

    # -- reading -----------------------------------------------------------------------
    async def available(self, user_id: int, token_id: int | None) -> int:
        """What a reservation for this caller could take here now: for each balance it draws
        on (the key's when ``token_id`` is given, the user's), this worker's free lease plus
        what the database still holds; the smaller. One read per balance: for a request its
        balance cannot cover in full (admission lowers its output bound to fit)."""
        found: int | None = None
        for kind, ref_id in (("token", token_id), ("user", user_id)):
            if ref_id is None:
                continue
            lease = self.leases.get((kind, ref_id))
            here = (lease.free if lease is not None else 0) + await read_balance(kind, ref_id)
            found = here if found is None else min(found, here)
        return max(0, found or 0)
