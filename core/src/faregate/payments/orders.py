"""Top-up orders (new-api's ``top_ups``): a pending order bound to its user, provider, payment
method, amount, money and currency, and completing it **exactly once**.

Completing is one conditional UPDATE (this order, still ``pending`` → ``success``; an admin may
also rescue an ``expired`` or ``failed`` one whose money arrived late) in one
transaction with the quota increment (under the wallet ceiling) and the top-up log row: however
many workers, nodes or replayed callbacks race for an order, exactly one statement changes the
row, and only that one credits. An event of one provider never completes another's order, and
the money and currency paid must be the order's. The same pattern as redeeming a code
(``faregate.management.redemptions``); it needs no ``SELECT … FOR UPDATE`` (which SQLite lacks).

These functions touch only the database: after a credit, the caller tells the workers
(``gateway.feed.publish("user", user_id)``); the management routes do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Literal

from tortoise.expressions import F
from tortoise.transactions import in_transaction

from faregate import jsonutil
from faregate.billing.options import QUOTA_PER_UNIT_DEFAULT
from faregate.billing.pricing import MAX_QUOTA
from faregate.contracts.payments import Quote, TopUpOrder
from faregate.db import models as m

#: why a completion was refused (stable words, for logs and tests)
RejectReason = Literal["unknown order", "wrong provider", "money missing", "amount mismatch", "currency mismatch",
                       "not pending", "wallet full", "no user"]


#: what an admin may complete by hand: a pending order, or one whose checkout expired or failed
#: while the money still arrived (a late payment rescued); a gateway's event completes only pending
ADMIN_COMPLETABLE = (m.TOPUP_PENDING, m.TOPUP_EXPIRED, m.TOPUP_FAILED)


class Completion(StrEnum):
    CREDITED = "credited"  # this call completed the order and credited the user
    ALREADY_DONE = "already_done"  # the order was completed before (a replay): nothing credited
    REJECTED = "rejected"  # nothing changed; ``reason`` says why


@dataclass(frozen=True, slots=True)
class TopUpOutcome:
    status: Completion
    trade_no: str
    reason: RejectReason | None = None
    user_id: int = 0
    #: the quota credited by this call (0 unless CREDITED)
    quota: int = 0
    #: the order's status before this call completed it (CREDITED only): ``expired`` or ``failed``
    #: when an admin rescued a late payment
    was: str = ""

    @property
    def credited(self) -> bool:
        return self.status is Completion.CREDITED


def order_view(row: m.TopUp) -> TopUpOrder:
    return TopUpOrder(id=row.id, trade_no=row.trade_no, user_id=row.user_id, provider=row.payment_provider,
                      payment_method=row.payment_method, amount=row.amount, money=Decimal(row.money),
                      currency=row.currency, quota=row.quota, status=row.status, create_time=row.create_time,
                      complete_time=row.complete_time)


async def create_top_up(user_id: int, provider: str, quote: Quote, trade_no: str) -> TopUpOrder:
    """Store a pending order for ``quote``, bound to ``user_id`` and ``provider``. Raises
    tortoise's ``IntegrityError`` when ``trade_no`` is taken."""
    row = await m.TopUp.create(user_id=user_id, amount=quote.amount, money=quote.money, trade_no=trade_no,
                               payment_method=quote.payment_method, payment_provider=provider,
                               currency=quote.currency.upper(), quota=quote.quota, create_time=int(time.time()),
                               status=m.TOPUP_PENDING)
    return order_view(row)


async def fail_top_up(trade_no: str, provider: str) -> bool:
    """A pending order of ``provider`` whose checkout could not start becomes ``failed``."""
    changed = await m.TopUp.filter(trade_no=trade_no, payment_provider=provider, status=m.TOPUP_PENDING) \
        .update(status=m.TOPUP_FAILED)
    return changed == 1


async def expire_top_up(trade_no: str, provider: str) -> bool:
    """A pending order of ``provider`` whose checkout ended unpaid becomes ``expired`` (a paid
    or another provider's order is left alone); True when it changed."""
    changed = await m.TopUp.filter(trade_no=trade_no, payment_provider=provider, status=m.TOPUP_PENDING) \
        .update(status=m.TOPUP_EXPIRED, complete_time=int(time.time()))
    return changed == 1


def _legacy_quota(row: m.TopUp, quota_per_unit: float) -> int:
    """An order stored before orders kept their quota (imported from new-api): its rule."""
    if row.payment_provider == "creem":
        return int(row.amount)
    return int(Decimal(row.amount) * Decimal(str(quota_per_unit)))


class _Refused(Exception):
    def __init__(self, reason: RejectReason) -> None:
        self.reason = reason


async def complete_top_up(trade_no: str, *, provider: str | None, money: Decimal | None = None, currency: str = "",
                          event_id: str = "", reference: str = "", payment_method: str = "", client_ip: str = "",
                          quota_per_unit: float = QUOTA_PER_UNIT_DEFAULT) -> TopUpOutcome:
    """Complete the pending order ``trade_no`` and credit its user, once.

    ``provider`` is the provider whose verified event says the order was paid: the order must
    be that provider's, and ``money`` / ``currency`` (what the event says was paid, major units)
    must equal the order's. ``provider=None`` is an admin's manual completion
    (``POST /api/user/topup/complete``): a pending order, or an expired or failed one whose money
    arrived late (:data:`ADMIN_COMPLETABLE`), no money check. Only an admin rescues an expired or
    failed order: a gateway's late event for it is refused, and once completed it is never
    credited again, whoever asks.

    Returns CREDITED (this call credited ``quota``), ALREADY_DONE (completed before: a replay)
    or REJECTED with a ``reason``; a rejection changes nothing. ``payment_method``, when given,
    replaces the order's (Epay reports the method actually used). ``quota_per_unit`` only prices
    orders stored without their quota (imported ones)."""
    row = await m.TopUp.get_or_none(trade_no=trade_no)
    if row is None:
        return TopUpOutcome(Completion.REJECTED, trade_no, "unknown order")
    if provider is not None and row.payment_provider != provider:
        return TopUpOutcome(Completion.REJECTED, trade_no, "wrong provider", user_id=row.user_id)
    if row.status == m.TOPUP_SUCCESS:
        return TopUpOutcome(Completion.ALREADY_DONE, trade_no, user_id=row.user_id)
    completable = ADMIN_COMPLETABLE if provider is None else (m.TOPUP_PENDING,)
    if row.status not in completable:
        return TopUpOutcome(Completion.REJECTED, trade_no, "not pending", user_id=row.user_id)
    if provider is not None:
        if money is None:
            return TopUpOutcome(Completion.REJECTED, trade_no, "money missing", user_id=row.user_id)
        if Decimal(row.money) != money:
            return TopUpOutcome(Completion.REJECTED, trade_no, "amount mismatch", user_id=row.user_id)
        if not row.currency or row.currency.upper() != currency.upper():
            return TopUpOutcome(Completion.REJECTED, trade_no, "currency mismatch", user_id=row.user_id)
    quota = row.quota or _legacy_quota(row, quota_per_unit)
    if not 0 < quota <= MAX_QUOTA:
        return TopUpOutcome(Completion.REJECTED, trade_no, "wallet full", user_id=row.user_id)
    now = int(time.time())
    changes: dict[str, object] = {"status": m.TOPUP_SUCCESS, "complete_time": now}
    if payment_method and payment_method != row.payment_method and len(payment_method) <= 50:
        changes["payment_method"] = payment_method
    by = provider or "admin"
    try:
        async with in_transaction() as conn:
            # the one statement that decides: of every racing call, one changes the row (from the
            # status read above: an order that changed meanwhile is decided afresh below)
            won = await m.TopUp.filter(id=row.id, status=row.status, payment_provider=row.payment_provider) \
                .using_db(conn).update(**changes)
            if won != 1:
                raise _Refused("not pending")
            credited = await m.User.filter(id=row.user_id, quota__lte=MAX_QUOTA - quota).using_db(conn) \
                .update(quota=F("quota") + quota)
            if credited != 1:
                exists = await m.User.filter(id=row.user_id).using_db(conn).exists()
                raise _Refused("wallet full" if exists else "no user")  # rolls the order back to pending
            user = await m.User.filter(id=row.user_id).using_db(conn).get()
            paid = f"{Decimal(row.money)} {row.currency}".strip()
            rescued = f", rescued from {row.status}" if row.status != m.TOPUP_PENDING else ""
            content = (f"top-up by an admin: {quota} quota for order {trade_no} ({paid}{rescued})"
                       if provider is None else
                       f"online top-up via {provider} ({changes.get('payment_method', row.payment_method)}): "
                       f"{quota} quota for {paid}, order {trade_no}")
            other = {"trade_no": trade_no, "payment_provider": row.payment_provider, "completed_by": by,
                     "money": str(Decimal(row.money)), "currency": row.currency}
            if rescued:
                other["rescued_from"] = row.status
            if event_id:
                other["event_id"] = event_id[:128]
            if reference:
                other["reference"] = reference[:128]
            await m.Log.create(user_id=row.user_id, username=user.username, type=m.LOG_TOPUP, quota=quota,
                               created_at=now, content=content, ip=client_ip[:64], other=jsonutil.dumps_str(other),
                               using_db=conn)
    except _Refused as refused:
        if refused.reason != "not pending":
            return TopUpOutcome(Completion.REJECTED, trade_no, refused.reason, user_id=row.user_id)
        # another call changed the order first: read it afresh (outside the transaction's snapshot)
        now_done = await m.TopUp.filter(id=row.id, status=m.TOPUP_SUCCESS).exists()
        if now_done:
            return TopUpOutcome(Completion.ALREADY_DONE, trade_no, user_id=row.user_id)
        return TopUpOutcome(Completion.REJECTED, trade_no, "not pending", user_id=row.user_id)
    return TopUpOutcome(Completion.CREDITED, trade_no, user_id=row.user_id, quota=quota, was=row.status)
