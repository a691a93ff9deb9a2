"""new-api's daily check-in (``/api/user/checkin``, a user's own): its status and the month's
check-ins (GET), and checking in (POST), while ``checkin_setting.enabled`` is on. The rules are
:mod:`faregate.accounts.checkin`'s."""

from __future__ import annotations

import re
import time

from quart import Blueprint, Response, request
from quart_schema import document_response

from faregate.accounts.checkin import CheckinRefused, award, check_in, checkin_stats, today
from faregate.db import models as m
from faregate.management.common import BadInput, fail, gateway, ok, require
from faregate.management.openapi import Ok, Shape
from faregate.principals import Principal

blueprint = Blueprint("checkins", __name__)

_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
DISABLED = "check-in is not enabled"


class CheckinRecord(Shape):
    checkin_date: str
    quota_awarded: int


class CheckinStats(Shape):
    total_quota: int
    total_checkins: int
    checkin_count: int
    checked_in_today: bool
    records: list[CheckinRecord]


class CheckinStatus(Shape):
    enabled: bool
    min_quota: int
    max_quota: int
    stats: CheckinStats


class CheckedIn(Shape):
    quota_awarded: int
    checkin_date: str


def _range() -> tuple[bool, int, int]:
    options = gateway().snapshot.options
    return (bool(options.value("checkin_setting.enabled")), int(options.value("checkin_setting.min_quota")),
            int(options.value("checkin_setting.max_quota")))


@blueprint.get("/api/user/checkin")
@require(m.ROLE_USER)
@document_response(Ok[CheckinStatus])
async def checkin_status(me: Principal) -> Response:
    """``?month=YYYY-MM`` (default: this month): ``{enabled, min_quota, max_quota, stats}``."""
    enabled, low, high = _range()
    if not enabled:
        return fail(DISABLED)
    month = request.args.get("month", "") or time.strftime("%Y-%m")
    if not _MONTH.match(month):
        raise BadInput("month must be YYYY-MM", status=400)
    return ok({"enabled": enabled, "min_quota": low, "max_quota": high,
               "stats": await checkin_stats(me.user.id, month, today())})


@blueprint.post("/api/user/checkin")
@require(m.ROLE_USER)
@document_response(Ok[CheckedIn])
async def do_checkin(me: Principal) -> Response:
    """Check in for today: ``{quota_awarded, checkin_date}``; once a day, however often asked."""
    enabled, low, high = _range()
    if not enabled:
        return fail(DISABLED)
    try:
        done = await check_in(me.user.id, me.user.username, award(low, high), today())
    except CheckinRefused as refused:
        return fail(str(refused))
    gw = gateway()
    await gw.feed.publish("user", me.user.id)
    gw.quota_warnings.recheck([me.user.id])  # above the threshold again: a later fall warns again
    return ok({"quota_awarded": done.quota_awarded, "checkin_date": done.checkin_date})
