"""Invitation rewards (new-api's "Convert Invitation Quota", ``POST /api/user/aff_transfer``):
a user moves quota earned by inviting others (``aff_quota``) into the balance they spend.
One conditional UPDATE moves it (only while ``aff_quota`` covers the amount), so two
concurrent transfers can never move the same reward twice."""

from __future__ import annotations

import time
from typing import Annotated

from pydantic import BaseModel, Field
from quart import Blueprint, Response
from quart_schema import document_response, validate_request
from tortoise.expressions import F
from tortoise.transactions import in_transaction

from faregate.billing.pricing import MAX_QUOTA
from faregate.db import models as m
from faregate.management.common import fail, gateway, ok, require
from faregate.management.openapi import Body
from faregate.principals import Principal

blueprint = Blueprint("invitations", __name__)


class AffTransfer(Body):
    quota: Annotated[int, Field(ge=1, le=MAX_QUOTA)]


class Transferred(BaseModel):
    success: bool
    message: str


@blueprint.post("/api/user/aff_transfer")
@require(m.ROLE_USER)
@validate_request(AffTransfer)
@document_response(Transferred)
async def transfer_invitation_quota(data: AffTransfer, me: Principal) -> Response:
    """``{quota}``: at least one unit (new-api: QuotaPerUnit, i.e. $1) at a time."""
    minimum = int(gateway().snapshot.options.quota_per_unit)
    if data.quota < minimum:
        return fail(f"quota must be at least {minimum} (one unit)", status=400)
    async with in_transaction() as conn:
        moved = await m.User.filter(id=me.user.id, aff_quota__gte=data.quota).using_db(conn).update(
            aff_quota=F("aff_quota") - data.quota, quota=F("quota") + data.quota)
        if not moved:
            return fail("the invitation quota is less than the amount to transfer")
        await m.Log.create(user_id=me.user.id, username=me.user.username, type=m.LOG_TOPUP, quota=data.quota,
                           created_at=int(time.time()), using_db=conn,
                           content=f"moved {data.quota} invitation quota into the balance")
    await gateway().feed.publish("user", me.user.id)
    return ok(message="transferred")
