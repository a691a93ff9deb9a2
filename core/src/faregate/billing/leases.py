"""Quota leases: quota a worker took out of a balance (``users.quota`` or
``tokens.remain_quota``) ahead of use, in one conditional UPDATE recorded in
``quota_leases`` in the same transaction, so a reservation never spends more than the
database granted. The ledger (:mod:`faregate.billing.ledger`) reserves from them in
memory; the flush (:mod:`faregate.billing.pending`) writes what was spent and returns what
was not; the sweeper (:mod:`faregate.billing.workers`) returns a dead worker's."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from tortoise.expressions import F
from tortoise.transactions import in_transaction

from faregate.db import models as m

if TYPE_CHECKING:
    from tortoise.backends.base.client import BaseDBAsyncClient
    from tortoise.models import Model


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


# ---- the balances leases draw from ----------------------------------------------------
# The one place that tells a user lease from a token lease: everything else passes the
# lease's kind ("user" or "token") through.


def _balance(kind: str) -> tuple[type[Model], str]:
    """The table and column a lease of ``kind`` draws its quota from."""
    return (m.User, "quota") if kind == "user" else (m.Token, "remain_quota")


async def take_from_balance(kind: str, ref_id: int, amount: int, conn: BaseDBAsyncClient, *,
                            only_if_covered: bool = False) -> int:
    """Subtract ``amount`` from the balance; with ``only_if_covered``, only when it holds
    at least that much (one conditional UPDATE). Returns how many rows changed (0 or 1)."""
    model, column = _balance(kind)
    where: dict[str, Any] = {"id": ref_id}
    if only_if_covered:
        where[f"{column}__gte"] = amount
    return await model.filter(**where).using_db(conn).update(**{column: F(column) - amount})


async def read_balance(kind: str, ref_id: int) -> int:
    """What the balance holds now (0 for a row that is gone)."""
    model, column = _balance(kind)
    rows = await model.filter(id=ref_id).values_list(column, flat=True)
    return int(cast("list[int]", rows)[0]) if rows else 0


async def return_to_balance(kind: str, ref_id: int, amount: int, conn: BaseDBAsyncClient) -> None:
    """Give ``amount`` back to the balance (a returned or swept lease)."""
    model, column = _balance(kind)
    await model.filter(id=ref_id).using_db(conn).update(**{column: F(column) + amount})


async def lease_from_db(worker_id: str, kind: str, ref_id: int, amount: int) -> int:
    """Take ``amount`` out of the balance into ``worker_id``'s lease row when the balance
    covers it: ``amount`` granted, or 0."""
    async with in_transaction() as conn:
        if not await take_from_balance(kind, ref_id, amount, conn, only_if_covered=True):
            return 0
        updated = await m.QuotaLease.filter(worker=worker_id, kind=kind, ref_id=ref_id).using_db(
            conn).update(held=F("held") + amount)
        if not updated:
            await m.QuotaLease.create(worker=worker_id, kind=kind, ref_id=ref_id, held=amount, using_db=conn)
    return amount
