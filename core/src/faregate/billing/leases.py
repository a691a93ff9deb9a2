"""Quota leases: quota a worker took out of a balance (``users.quota`` or
``tokens.remain_quota``) ahead of use, in one conditional UPDATE recorded in
``quota_leases`` in the same transaction, so a reservation never spends more than the
database granted. The ledger (:mod:`faregate.billing.ledger`) reserves from them in
memory; the flush (:mod:`faregate.billing.pending`) writes what was spent and returns what
was not; the sweeper (:mod:`faregate.billing.workers`) returns a dead worker's.

A chunk never takes more than half of what the balance holds (beyond the request's need),
so on a small balance every worker gets a share; a worker that still falls short asks the
other holders to give their unreserved part back (:func:`ask_back`, ``quota_leases.wanted``),
which each does at its next flush (:func:`asked_back`)."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from tortoise.exceptions import OperationalError
from tortoise.expressions import F, RawSQL, Subquery
from tortoise.functions import Count, Sum
from tortoise.transactions import in_transaction

from faregate.db import models as m
from faregate.db.deadlocks import is_deadlock

if TYPE_CHECKING:
    from tortoise.backends.base.client import BaseDBAsyncClient
    from tortoise.models import Model
    from tortoise.queryset import QuerySet


ModelT = TypeVar("ModelT", bound="Model")


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
    #: when (monotonic) this worker last gave the lease's free part back to another worker
    #: that asked: for a while it then takes what it needs, no chunk ahead
    given_back: float = -1e9
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


def with_held(kind: str, query: QuerySet[ModelT]) -> QuerySet[ModelT]:
    """``query`` (of users for ``kind`` ``user``, of keys for ``token``) with each row's ``held``,
    what every worker's leases of it hold (:func:`held_of`), read by the row's own statement: a
    flush or a lease moving quota between the row and its leases meanwhile is seen on one side,
    never on both (the leases read after the row counted it twice) or neither."""
    model, _ = _balance(kind)
    # the outer row's id, named by its table (a bare "id" would be the subquery's own)
    outer_id = RawSQL(f"{model._meta.db_table}.id")
    leases = m.QuotaLease.filter(kind=kind, ref_id=outer_id).annotate(total=Sum("held")).values("total")
    return query.annotate(held=Subquery(leases))


def held_of(row: Model) -> int:
    """The ``held`` of a row read through :func:`with_held`."""
    return int(vars(row)["held"] or 0)  # an annotation, no attribute of the model type


async def row_with_held(kind: str, ref_id: int, *columns: str) -> dict[str, Any] | None:
    """The user's (``kind`` ``user``) or key's (``token``) row's ``columns`` and ``held``, what
    every worker's leases of it hold, read in one statement (:func:`with_held`): a key's quota
    read in two was shown 0.02 $ above what it was given. None when the row is gone."""
    model, _ = _balance(kind)
    rows = await with_held(kind, model.filter(id=ref_id)).values(*columns, "held")
    if not rows:
        return None
    row = dict(rows[0])
    row["held"] = int(row["held"] or 0)
    return row


async def balance_of(kind: str, ref_id: int) -> int:
    """What the balance column holds now (not counting what workers hold leased)."""
    model, column = _balance(kind)
    rows = await model.filter(id=ref_id).values_list(column, flat=True)
    return int(cast("list[int]", rows)[0]) if rows else 0


#: how often a lease transaction is tried when the engine picks it as a deadlock's victim
DEADLOCK_ATTEMPTS = 3


async def lease_from_db(worker_id: str, kind: str, ref_id: int, need: int, chunk: int) -> int:
    """Take quota out of the balance into ``worker_id``'s lease row: ``chunk`` (at least
    ``need``) when the balance keeps as much again for other workers, else half the balance,
    never less than ``need``. Returns what was granted: 0 when the balance does not cover
    ``need``."""
    size = need
    if chunk > need:
        # a hint (the conditional UPDATEs decide), read before the transaction: on SQLite a
        # transaction that reads first cannot write once another process has written
        hint = await balance_of(kind, ref_id)
        if hint < need:
            return 0  # refused without a write (a spent key used again and again)
        size = max(need, min(chunk, hint // 2))
    attempts = 0
    while True:
        try:
            return await _take_lease(worker_id, kind, ref_id, need, size)
        except OperationalError as exc:
            attempts += 1
            if attempts == DEADLOCK_ATTEMPTS or not is_deadlock(exc):
                raise
            # rolled back whole by the engine: nothing was taken; the other side goes first
            await asyncio.sleep(random.uniform(0.001, 0.01) * attempts)


async def _take_lease(worker_id: str, kind: str, ref_id: int, need: int, size: int) -> int:
    async with in_transaction() as conn:
        if size > need and await take_from_balance(kind, ref_id, size, conn, only_if_covered=True):
            granted = size
        elif await take_from_balance(kind, ref_id, need, conn, only_if_covered=True):
            granted = need
        else:
            return 0
        updated = await m.QuotaLease.filter(worker=worker_id, kind=kind, ref_id=ref_id).using_db(
            conn).update(held=F("held") + granted)
        if not updated:
            await m.QuotaLease.create(worker=worker_id, kind=kind, ref_id=ref_id, held=granted, using_db=conn)
    return granted


# ---- asking other workers to give a balance back ----------------------------------------


@dataclass(slots=True)
class Holders:
    """A balance as a worker short of it sees it: the column, what the other workers hold
    leased (their reservations in flight included), and how many of them were asked to give
    back and have not answered yet."""

    balance: int
    held_elsewhere: int
    unanswered: int


async def holders(worker_id: str, kind: str, ref_id: int) -> Holders:
    """One statement, so the column and the other leases are read at one instant (money
    moving between them in between would be counted twice or not at all)."""
    model, column = _balance(kind)
    others = m.QuotaLease.filter(kind=kind, ref_id=ref_id, held__gt=0).exclude(worker=worker_id)
    rows = await model.filter(id=ref_id).annotate(
        elsewhere=Subquery(others.annotate(total=Sum("held")).values("total")),
        unanswered=Subquery(others.filter(wanted=True).annotate(count=Count("id")).values("count")),
    ).values(column, "elsewhere", "unanswered")
    if not rows:
        return Holders(0, 0, 0)
    row = rows[0]
    return Holders(int(row[column] or 0), int(row["elsewhere"] or 0), int(row["unanswered"] or 0))


async def ask_back(worker_id: str, kind: str, ref_id: int) -> None:
    """Ask every other worker holding this balance to give back what it has not reserved."""
    # the rows found first, then marked by primary key: an UPDATE scanning the (kind, ref_id)
    # index takes gap locks there that deadlock with a lease row being inserted (MariaDB)
    ids = await m.QuotaLease.filter(kind=kind, ref_id=ref_id, held__gt=0, wanted=False).exclude(
        worker=worker_id).values_list("id", flat=True)
    if ids:
        await m.QuotaLease.filter(id__in=list(ids)).update(wanted=True)


async def asked_back(worker_id: str) -> set[tuple[str, int]]:
    """The balances other workers asked ``worker_id`` to give back (one indexed read)."""
    rows = await m.QuotaLease.filter(worker=worker_id, wanted=True).values_list("kind", "ref_id")
    return {(str(kind), int(ref)) for kind, ref in rows}
