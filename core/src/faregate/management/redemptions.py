"""Redemption codes (new-api's ``/api/redemption``, admin) and redeeming one
(``POST /api/user/topup``). Redeeming is one conditional UPDATE (enabled, unexpired,
this key → used by this user): however many workers or nodes race for a code, exactly
one statement changes the row, and only that one credits the quota."""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Any

from pydantic import Field, StringConstraints
from quart import Blueprint, Response, request
from quart_schema import document_response, validate_request
from tortoise.expressions import F, Q
from tortoise.queryset import QuerySet
from tortoise.transactions import in_transaction

from faregate.billing.pricing import MAX_QUOTA
from faregate.db import models as m
from faregate.management.common import (
    TIME_MAX,
    fail,
    gateway,
    keyword_match,
    ok,
    page_data,
    page_rows,
    parse_id,
    query_text,
    require,
)
from faregate.management.openapi import INT64, Body, Done, Ok, Page, RowId, Shape
from faregate.principals import Principal

blueprint = Blueprint("redemptions", __name__)

MAX_BATCH = 100
NAME_MAX = 20
QUOTA_MAX = MAX_QUOTA


class RedemptionView(Shape):
    id: int
    user_id: int
    key: str
    status: int
    name: str
    quota: int
    created_time: int
    redeemed_time: int
    used_user_id: int
    expired_time: int


def redemption_view(row: m.Redemption) -> dict[str, Any]:
    return {"id": row.id, "user_id": row.user_id, "key": row.key, "status": row.status, "name": row.name,
            "quota": row.quota, "created_time": row.created_time, "redeemed_time": row.redeemed_time,
            "used_user_id": row.used_user_id, "expired_time": row.expired_time}


async def _page(query: QuerySet[m.Redemption]) -> Response:
    rows, total, page, size = await page_rows(query)
    return ok(page_data([redemption_view(r) for r in rows], total, page, size))


@blueprint.get("/api/redemption/")
@require(m.ROLE_ADMIN)
@document_response(Ok[Page[RedemptionView]])
async def list_redemptions(me: Principal) -> Response:
    return await _page(m.Redemption.all())


@blueprint.get("/api/redemption/search")
@require(m.ROLE_ADMIN)
@document_response(Ok[Page[RedemptionView]])
async def search_redemptions(me: Principal) -> Response:
    """``?keyword=``: name contains it (wildcards literal), or an exact id."""
    keyword = query_text("keyword", 64)
    query = m.Redemption.all()
    if keyword:
        query = query.filter(keyword_match(keyword, "name"))
    return await _page(query)


@blueprint.get("/api/redemption/<redemption_id>")
@require(m.ROLE_ADMIN)
@document_response(Ok[RedemptionView])
async def get_redemption(redemption_id: str, me: Principal) -> Response:
    row = await m.Redemption.get_or_none(id=parse_id(redemption_id))
    return ok(redemption_view(row)) if row is not None else fail("redemption code not found")


Expiry = Annotated[int, Field(ge=0, le=TIME_MAX, description="unix seconds; 0: never")]


class RedemptionEcho(Body):
    """What new-api's UI sends beside the writable fields (its form's ``amount``, the quota
    shown as money; the code it loaded): accepted and ignored."""

    amount: float | None = None
    user_id: INT64 | None = None
    key: Annotated[str, Field(max_length=64)] | None = None
    created_time: INT64 | None = None
    redeemed_time: INT64 | None = None
    used_user_id: INT64 | None = None
    DeletedAt: Annotated[str, Field(max_length=64)] | None = None  # GORM's soft-delete column


class RedemptionCreate(RedemptionEcho):
    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=NAME_MAX)]
    count: Annotated[int, Field(ge=1, le=MAX_BATCH)] = 1
    quota: Annotated[int, Field(ge=1, le=QUOTA_MAX)]
    expired_time: Expiry = 0


class Keys(Ok[list[str]]):
    """The new codes."""


@blueprint.post("/api/redemption/")
@require(m.ROLE_ADMIN)
@validate_request(RedemptionCreate)
@document_response(Keys)
async def create_redemptions(data: RedemptionCreate, me: Principal) -> Response:
    """``{name, count, quota, expired_time}`` → the new keys."""
    name, count, quota, expires = data.name, data.count, data.quota, data.expired_time
    now = int(time.time())
    if expires and expires < now:
        return fail("expired_time: the expiry time is in the past", status=400)
    keys = [uuid.uuid4().hex for _ in range(count)]
    async with in_transaction() as conn:
        for key in keys:
            await m.Redemption.create(user_id=me.user.id, key=key, name=name, quota=quota, created_time=now,
                                      expired_time=expires, using_db=conn)
    return ok(keys)


class RedemptionUpdate(RedemptionEcho):
    """Absent or null (and an empty name) leave a field unchanged."""

    id: RowId
    name: Annotated[str, StringConstraints(strip_whitespace=True, max_length=NAME_MAX)] | None = None
    quota: Annotated[int, Field(ge=1, le=QUOTA_MAX)] | None = None
    expired_time: Expiry | None = None
    status: Annotated[int, Field(ge=m.REDEMPTION_ENABLED, le=m.REDEMPTION_DISABLED,
                                 description="1 enabled, 2 disabled")] | None = None
    count: INT64 | None = None  # the creation form's, ignored


@blueprint.put("/api/redemption/")
@require(m.ROLE_ADMIN)
@validate_request(RedemptionUpdate)
@document_response(Ok[RedemptionView])
async def update_redemption(data: RedemptionUpdate, me: Principal) -> Response:
    """Partial update; ``?status_only=1`` changes only the status. A used code stays used."""
    row = await m.Redemption.get_or_none(id=data.id)
    if row is None:
        return fail("redemption code not found")
    fields: dict[str, Any] = {}
    if data.status is not None:
        fields["status"] = data.status
    if not request.args.get("status_only"):
        if data.name:
            fields["name"] = data.name
        if data.quota is not None:
            fields["quota"] = data.quota
        if data.expired_time is not None:
            fields["expired_time"] = data.expired_time
    # conditional: a code redeemed meanwhile is not re-enabled or changed
    changed = await m.Redemption.filter(id=row.id).exclude(status=m.REDEMPTION_USED).update(**fields) \
        if fields else 0
    if fields and not changed:
        return fail("the code has been used and cannot be changed")
    return ok(redemption_view(await m.Redemption.get(id=row.id)))


@blueprint.delete("/api/redemption/invalid")
@require(m.ROLE_ADMIN)
@document_response(Ok[int])
async def delete_invalid(me: Principal) -> Response:
    """Every used, disabled or expired code; the count."""
    now = int(time.time())
    query = m.Redemption.filter(Q(status__in=[m.REDEMPTION_USED, m.REDEMPTION_DISABLED])
                                | Q(expired_time__gt=0, expired_time__lt=now))
    return ok(await query.delete())


@blueprint.delete("/api/redemption/<redemption_id>")
@require(m.ROLE_ADMIN)
@document_response(Done)
async def delete_redemption(redemption_id: str, me: Principal) -> Response:
    deleted = await m.Redemption.filter(id=parse_id(redemption_id)).delete()
    return ok() if deleted else fail("redemption code not found")


class Redeem(Body):
    key: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=32)]


class RedeemRefused(Exception):
    """The code does not exist, or was used, disabled or has expired, or the user cannot take
    its quota (gone, or the wallet would pass its ceiling); the message says which."""


async def redeem_code(user_id: int, username: str, key: str) -> int:
    """Credit the quota of code ``key`` to the user, once: the quota credited. One conditional
    UPDATE (enabled, unexpired, this key → used by this user) in one transaction with the
    credit (under the wallet ceiling, as a top-up's) and the top-up log row, so of every racing
    call exactly one credits. A user who is gone or whose wallet is full is refused and the
    whole transaction rolls back: the code stays unused. Raises :class:`RedeemRefused`."""
    now = int(time.time())
    async with in_transaction() as conn:
        row = await m.Redemption.filter(key=key).using_db(conn).first()
        if row is None:
            raise RedeemRefused("invalid redemption code")
        won = await m.Redemption.filter(
            Q(expired_time=0) | Q(expired_time__gt=now), id=row.id, status=m.REDEMPTION_ENABLED,
        ).using_db(conn).update(status=m.REDEMPTION_USED, used_user_id=user_id, redeemed_time=now)
        if not won:
            raise RedeemRefused("this redemption code has been used, disabled or has expired")
        # raising inside the transaction rolls the code back to unused
        credited = await m.User.filter(id=user_id, quota__lte=MAX_QUOTA - row.quota).using_db(conn) \
            .update(quota=F("quota") + row.quota)
        if credited != 1:
            if await m.User.filter(id=user_id).using_db(conn).exists():
                raise RedeemRefused("the wallet cannot hold more quota")
            raise RedeemRefused("the user no longer exists")
        await m.Log.create(user_id=user_id, username=username, type=m.LOG_TOPUP, quota=row.quota,
                           created_at=now, content=f"redeemed code {row.id} ({row.name}) for {row.quota} quota",
                           using_db=conn)
    return int(row.quota)


@blueprint.post("/api/user/topup")
@require(m.ROLE_USER)
@validate_request(Redeem)
@document_response(Ok[int])
async def redeem(data: Redeem, me: Principal) -> Response:
    """``{key}`` → the quota added. Credited exactly once, whoever races for the code."""
    try:
        quota = await redeem_code(me.user.id, me.user.username, data.key)
    except RedeemRefused as refused:
        return fail(str(refused))
    await gateway().feed.publish("user", me.user.id)
    gateway().quota_warnings.recheck([me.user.id])  # above the threshold again: a later fall warns again
    return ok(quota)
