"""new-api's daily check-in: a user checks in once a day (the server's local date, as new-api's)
and is credited a random quota between ``checkin_setting.min_quota`` and ``…max_quota`` while
``checkin_setting.enabled`` is on. Once a day is the database's word, not a worker's: the check-in
row's (user, date) pair is unique, and the row, the credit (under the wallet ceiling) and the log
row are one transaction, so of any number of check-ins at once on any workers or nodes exactly
one credits. The options are declared with the other account options (:mod:`.options`)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from tortoise.exceptions import IntegrityError
from tortoise.expressions import F
from tortoise.functions import Count, Sum
from tortoise.transactions import in_transaction

from faregate.billing.pricing import MAX_QUOTA
from faregate.db import models as m


class CheckinRefused(Exception):
    """Already checked in today, or the credit cannot be made (the message says which)."""


@dataclass(frozen=True, slots=True)
class Checkin:
    quota_awarded: int
    checkin_date: str


def today() -> str:
    """The server's local date, ``YYYY-MM-DD``, as new-api's ``time.Now().Format``."""
    return time.strftime("%Y-%m-%d")


def award(min_quota: int, max_quota: int) -> int:
    """new-api's draw: uniform from min to max, both included (min when max is not above it)."""
    return min_quota + random.randint(0, max_quota - min_quota) if max_quota > min_quota else min_quota


async def check_in(user_id: int, username: str, quota: int, date: str) -> Checkin:
    """Record the user's check-in of ``date`` and credit ``quota``, once: a second check-in of the
    day, a user gone or a full wallet is refused and nothing is kept."""
    now = int(time.time())
    try:
        async with in_transaction() as conn:
            await m.Checkin.create(user_id=user_id, checkin_date=date, quota_awarded=quota, created_at=now,
                                   using_db=conn)
            # raising inside the transaction takes the check-in row back too
            credited = await m.User.filter(id=user_id, quota__lte=MAX_QUOTA - quota).using_db(conn) \
                .update(quota=F("quota") + quota)
            if credited != 1:
                if await m.User.filter(id=user_id).using_db(conn).exists():
                    raise CheckinRefused("the wallet cannot hold more quota")
                raise CheckinRefused("the user no longer exists")
            await m.Log.create(user_id=user_id, username=username, type=m.LOG_SYSTEM, quota=quota, created_at=now,
                               content=f"daily check-in: {quota} quota", using_db=conn)
    except IntegrityError:
        raise CheckinRefused("already checked in today") from None
    return Checkin(quota, date)


async def checkin_stats(user_id: int, month: str, date: str) -> dict[str, Any]:
    """new-api's ``stats``: the month's check-ins (``YYYY-MM``), today's, and the totals of all time."""
    records = await m.Checkin.filter(user_id=user_id, checkin_date__startswith=f"{month}-") \
        .order_by("-checkin_date").values("checkin_date", "quota_awarded")
    totals = await m.Checkin.filter(user_id=user_id).annotate(n=Count("id"), total=Sum("quota_awarded")) \
        .first().values("n", "total")
    return {"total_quota": int((totals or {}).get("total") or 0), "total_checkins": int((totals or {}).get("n") or 0),
            "checkin_count": len(records),
            "checked_in_today": await m.Checkin.filter(user_id=user_id, checkin_date=date).exists(),
            "records": [{"checkin_date": r["checkin_date"], "quota_awarded": int(r["quota_awarded"])}
                        for r in records]}
