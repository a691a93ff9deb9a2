"""Redemption codes (new-api's ``/api/redemption``, admin) and redeeming one
(``POST /api/user/topup``). Redeeming is one conditional UPDATE (enabled, unexpired,
this key → used by this user): however many workers or nodes race for a code, exactly
one statement changes the row, and only that one credits the quota."""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints
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
    get_int,
    get_str,
    keyword_match,
    ok,
    page_data,
    page_rows,
    parse_id,
    require,
    require_body,
)
from faregate.management.openapi import Body
from faregate.principals import Principal

blueprint = Blueprint("redemptions", __name__)

MAX_BATCH = 100
NAME_MAX = 20
QUOTA_MAX = MAX_QUOTA
STATUSES = (m.REDEMPTION_ENABLED, m.REDEMPTION_DISABLED, m.REDEMPTION_USED)


def redemption_view(row: m.Redemption) -> dict[str, Any]:
    return {"id": row.id, "user_id": row.user_id, "key": row.key, "status": row.status, "name": row.name,
            "quota": row.quota, "created_time": row.created_time, "redeemed_time": row.redeemed_time,
            "used_user_id": row.used_user_id, "expired_time": row.expired_time}


async def _page(query: QuerySet[m.Redemption]) -> Response:
    rows, total, page, size = await page_rows(query)
    return ok(page_data([redemption_view(r) for r in rows], total, page, size))


@blueprint.get("/api/redemption/")
@require(m.ROLE_ADMIN)
async def list_redemptions(me: Principal) -> Response:
    return await _page(m.Redemption.all())


@blueprint.get("/api/redemption/search")
@require(m.ROLE_ADMIN)
async def search_redemptions(me: Principal) -> Response:
    """``?keyword=``: name contains it (wildcards literal), or an exact id."""
    keyword = request.args.get("keyword", "").strip()
    if len(keyword) > 64 or "\x00" in keyword:
        return fail("keyword must be at most 64 characters", status=400)
    query = m.Redemption.all()
    if keyword:
        query = query.filter(keyword_match(keyword, "name"))
    return await _page(query)


@blueprint.get("/api/redemption/<redemption_id>")
@require(m.ROLE_ADMIN)
async def get_redemption(redemption_id: str, me: Principal) -> Response:
    row = await m.Redemption.get_or_none(id=parse_id(redemption_id))
    return ok(redemption_view(row)) if row is not None else fail("redemption code not found")


class RedemptionCreate(Body):
    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=NAME_MAX)]
    count: Annotated[int, Field(ge=1, le=MAX_BATCH)] = 1
    quota: Annotated[int, Field(ge=1, le=QUOTA_MAX)]
    expired_time: Annotated[int, Field(ge=0, le=TIME_MAX, description="unix seconds; 0: never")] = 0


class Keys(BaseModel):
    success: bool
    message: str
    data: list[str]


@blueprint.post("/api/redemption/")
@require(m.ROLE_ADMIN)
@validate_request(RedemptionCreate)
@document_response(Keys)
async def create_redemptions(data: RedemptionCreate, me: Principal) -> Response:
    """``{name, count, quota, expired_time}`` → the new keys."""
    name, count, quota, expires = data.name, data.count, data.quota, data.expired_time
    now = int(time.time())
    if expires and expires < now:
        return fail("the expiry time is in the past", status=400)
    keys = [uuid.uuid4().hex for _ in range(count)]
    async with in_transaction() as conn:
        for key in keys:
            await m.Redemption.create(user_id=me.user.id, key=key, name=name, quota=quota, created_time=now,
                                      expired_time=expires, using_db=conn)
    return ok(keys)


@blueprint.put("/api/redemption/")
@require(m.ROLE_ADMIN)
async def update_redemption(me: Principal) -> Response:
    """Partial update; ``?status_only=1`` changes only the status. A used code stays used."""
    body = await require_body()
    row = await m.Redemption.get_or_none(id=parse_id(body.get("id"), text=False))
    if row is None:
        return fail("redemption code not found")
    fields: dict[str, Any] = {}
    status = get_int(body, "status")
    if status is not None:
        if status not in (m.REDEMPTION_ENABLED, m.REDEMPTION_DISABLED):
            return fail("status must be 1 (enabled) or 2 (disabled)", status=400)
        fields["status"] = status
    if not request.args.get("status_only"):
        name = get_str(body, "name", max_len=NAME_MAX, strip=True)
        if name:
            fields["name"] = name
        quota = get_int(body, "quota", lo=1, hi=QUOTA_MAX)
        if quota is not None:
            fields["quota"] = quota
        expires = get_int(body, "expired_time", lo=0, hi=TIME_MAX)
        if expires is not None:
            fields["expired_time"] = expires
    # conditional: a code redeemed meanwhile is not re-enabled or changed
    changed = await m.Redemption.filter(id=row.id).exclude(status=m.REDEMPTION_USED).update(**fields) \
        if fields else 0
    if fields and not changed:
        return fail("the code has been used and cannot be changed")
    return ok(redemption_view(await m.Redemption.get(id=row.id)))


@blueprint.delete("/api/redemption/invalid")
@require(m.ROLE_ADMIN)
async def delete_invalid(me: Principal) -> Response:
    """Every used, disabled or expired code; the count."""
    now = int(time.time())
    query = m.Redemption.filter(Q(status__in=[m.REDEMPTION_USED, m.REDEMPTION_DISABLED])
                                | Q(expired_time__gt=0, expired_time__lt=now))
    return ok(await query.delete())


@blueprint.delete("/api/redemption/<redemption_id>")
@require(m.ROLE_ADMIN)
async def delete_redemption(redemption_id: str, me: Principal) -> Response:
    deleted = await m.Redemption.filter(id=parse_id(redemption_id)).delete()
    return ok() if deleted else fail("redemption code not found")


class Redeem(Body):
    key: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=32)]


@blueprint.post("/api/user/topup")
@require(m.ROLE_USER)
@validate_request(Redeem)
async def redeem(data: Redeem, me: Principal) -> Response:
    """``{key}`` → the quota added. Credited exactly once, whoever races for the code."""
    key = data.key
    now = int(time.time())
    async with in_transaction() as conn:
        row = await m.Redemption.filter(key=key).using_db(conn).first()
        if row is None:
            return fail("invalid redemption code")
        won = await m.Redemption.filter(
            Q(expired_time=0) | Q(expired_time__gt=now), id=row.id, status=m.REDEMPTION_ENABLED,
        ).using_db(conn).update(status=m.REDEMPTION_USED, used_user_id=me.user.id, redeemed_time=now)
        if not won:
            return fail("this redemption code has been used, disabled or has expired")
        await m.User.filter(id=me.user.id).using_db(conn).update(quota=F("quota") + row.quota)
        await m.Log.create(user_id=me.user.id, username=me.user.username, type=m.LOG_TOPUP, quota=row.quota,
                           created_at=now, content=f"redeemed code {row.id} ({row.name}) for {row.quota} quota",
                           using_db=conn)
    await gateway().feed.publish("user", me.user.id)
    return ok(row.quota)
