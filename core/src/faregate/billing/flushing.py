"""What one flush of the ledger writes, and writing it exactly once.

:func:`gather` picks what a flush carries besides the settled batch: what each lease spent,
and the leases that go back (idle ones whole; of one another worker asked for, the part not
reserved). :class:`FlushWriter` writes it in one transaction (:func:`write_batch`); a batch
whose commit failed is held aside until the database tells whether it landed (by a log row
of it), so its charges are neither lost nor written twice."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from faregate.billing.leases import Lease
from faregate.billing.pending import Batch, CommitFailed, PendingWrites, Swept, write_batch
from faregate.billing.statements import StatementRunner
from faregate.db import models as m
from faregate.db.backend import run_each

log = logging.getLogger("faregate.billing")


@dataclass(slots=True)
class Flush:
    """One flush's writes: the settled batch, what each lease spent, what goes back to the
    balances, and the asks of other workers it answers."""

    batch: Batch
    consumed: list[tuple[Lease, int]] = field(default_factory=list)
    returning: list[tuple[Lease, int]] = field(default_factory=list)
    asked: set[tuple[str, int]] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.batch or self.consumed or self.returning or self.asked)


def gather(
    batch: Batch, leases: Iterable[Lease], asked: set[tuple[str, int]], *, lease_idle: float, return_all: bool
) -> Flush:
    """Leases idle for ``lease_idle`` go back whole (all of them with ``return_all``); of a
    lease another worker asked for, what is not reserved goes back, and the ask is answered."""
    flush = Flush(batch, asked=asked)
    now = time.monotonic()
    for lease in leases:
        if lease.consumed_unflushed:
            flush.consumed.append((lease, lease.consumed_unflushed))
        if lease.orphaned:
            continue
        wanted = (lease.kind, lease.ref_id) in asked
        if wanted:
            lease.given_back = now
        if lease.reserved == 0 and not lease.lock.locked() and (return_all or now - lease.last_used > lease_idle):
            flush.returning.append((lease, lease.free))
        elif wanted and lease.free > 0:
            flush.returning.append((lease, lease.free))
    return flush


class FlushWriter:
    """Writes a worker's flushes; keeps apart the one whose commit failed until it is known
    whether it landed."""

    __slots__ = ("worker_id", "pending", "in_doubt", "run_statements")

    def __init__(self, worker_id: str, pending: PendingWrites, run_statements: StatementRunner = run_each) -> None:
        self.worker_id = worker_id
        self.pending = pending
        #: the storage engine's StorageBackend.run_statements
        self.run_statements = run_statements
        #: a flush whose commit failed, with a request id of its log rows to look it up by
        self.in_doubt: tuple[str, Flush] | None = None

    async def write(self, flush: Flush) -> None:
        """Write ``flush`` in one transaction. When that fails the error is raised and the
        flush goes back to be written again, or is held aside (:meth:`resolve`); a failed
        commit of a flush with no log row to find it by returns as written. Raises
        :class:`Swept` with the batch requeued."""
        # out of memory before the transaction: a reservation arriving while it runs must not
        # spend money that is on its way back to the balance (it leases anew instead)
        for lease, amount in flush.returning:
            lease.free -= amount
        try:
            await write_batch(self.worker_id, flush.batch, flush.consumed, flush.returning, flush.asked,
                              self.run_statements)
        except Swept:
            self.pending.requeue(flush.batch)
            raise
        except CommitFailed:
            marker = _marker(flush)
            if marker:
                # the connection may have died after the commit: whether it landed is read
                # from the database (by a row of the batch) before anything is written again
                self.in_doubt = (marker, flush)
                raise
            # nothing to look it up by (lease returns, asks, counters only): counted as
            # written, never applied twice (a return credited to the balance again, a spend
            # taken from the lease row again). Had it not landed, its lease rows keep that
            # money until this worker stops and the sweeper returns it: refunded, not lost.
            log.warning(
                "a billing flush's commit failed and nothing tells whether it landed; taken as written", exc_info=True
            )
        except Exception:
            marker = _marker(flush)
            if marker:
                self.in_doubt = (marker, flush)  # as above (it failed around its commit)
            else:
                self.undo(flush)  # failed before its commit: rolled back, written again next time
            raise

    async def resolve(self) -> Flush | None:
        """The flush whose commit failed was written (a row of it is in the database: returned,
        for the caller to finish) or not (back in the queue: None); raises, still in doubt,
        while the database cannot tell."""
        assert self.in_doubt is not None
        marker, flush = self.in_doubt
        landed = await m.Log.filter(request_id=marker).exists()
        self.in_doubt = None
        if landed:
            log.warning("a billing batch whose commit failed had been written; not writing it again")
            return flush
        self.undo(flush)
        return None

    def undo(self, flush: Flush) -> None:
        self.pending.requeue(flush.batch)
        for lease, amount in flush.returning:
            lease.free += amount


def _marker(flush: Flush) -> str:
    return next((e.request_id for e in flush.batch.logs if e.request_id), "")
