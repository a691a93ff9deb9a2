"""What one flush of the ledger writes, and writing it exactly once.

:func:`gather` picks what a flush carries besides the settled batch: what each lease spent,
and the leases that go back (idle ones whole; of one another worker asked for, the part not
reserved). :class:`FlushWriter` writes it in one transaction (:func:`write_batch`); a flush
whose commit failed is held aside until the database tells whether it landed (by the number
each flush writes into the worker's row), so its charges are neither lost nor written twice."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

from tortoise.transactions import in_transaction

from faregate.billing.leases import Lease
from faregate.billing.pending import Batch, PendingWrites, Swept, write_batch
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

    __slots__ = ("worker_id", "pending", "in_doubt", "run_statements", "number")

    def __init__(self, worker_id: str, pending: PendingWrites, run_statements: StatementRunner = run_each) -> None:
        self.worker_id = worker_id
        self.pending = pending
        #: the storage engine's StorageBackend.run_statements
        self.run_statements = run_statements
        #: the number of the last flush written or tried (each flush records its own in the
        #: worker's row, ``workers.flushed``)
        self.number = 0
        #: a flush whose commit failed: its number, and a request id of its log rows (the way
        #: to tell once the worker's row is gone)
        self.in_doubt: tuple[int, str, Flush] | None = None

    async def write(self, flush: Flush) -> None:
        """Write ``flush`` in one transaction. When that fails the error is raised and the
        flush goes back to be written again, or is held aside (:meth:`resolve`); a failed
        commit of a flush with no log row to find it by returns as written. Raises
        :class:`Swept` with the batch requeued."""
        # out of memory before the transaction: a reservation arriving while it runs must not
        # spend money that is on its way back to the balance (it leases anew instead)
        for lease, amount in flush.returning:
            lease.free -= amount
        self.number += 1
        try:
            await write_batch(self.worker_id, self.number, flush.batch, flush.consumed, flush.returning, flush.asked,
                              self.run_statements)
        except Swept:
            self.pending.requeue(flush.batch)
            raise
        except Exception:
            # the connection may have died after the commit (or around it): whether it landed is
            # read from the database before anything is written again (:meth:`resolve`)
            self.in_doubt = (self.number, _marker(flush), flush)
            raise

    async def resolve(self) -> Flush | None:
        """The flush whose commit failed was written (returned, for the caller to finish) or
        not (back in the queue: None); raises, still in doubt, while the database cannot tell.
        The worker's row tells, by the number the flush wrote into it; a locking read, so a
        commit the server is still finishing (its transaction holds that row) is waited for."""
        assert self.in_doubt is not None
        number, marker, flush = self.in_doubt
        async with in_transaction() as conn:
            rows = cast("list[int]", await m.Worker.filter(id=self.worker_id).using_db(conn).select_for_update()
                        .values_list("flushed", flat=True))  # the values (tortoise types them as tuples)
            if rows:
                landed = rows[0] == number
            elif marker:
                # swept meanwhile (its row went with its leases): a log row of the batch tells
                landed = await m.Log.filter(request_id=marker).using_db(conn).exists()
            else:
                # nothing tells: counted as written, never applied twice (a return credited again,
                # a spend taken from a lease row again); the sweeper gave back what the leases held
                log.warning("a billing flush's commit failed, its worker was swept, and nothing tells whether "
                            "it landed; taken as written")
                landed = True
        self.in_doubt = None
        if landed:
            log.warning("a billing flush whose commit failed had been written; not writing it again")
            return flush
        self.undo(flush)
        return None

    def undo(self, flush: Flush) -> None:
        self.pending.requeue(flush.batch)
        for lease, amount in flush.returning:
            lease.free += amount


def _marker(flush: Flush) -> str:
    return next((e.request_id for e in flush.batch.logs if e.request_id), "")
