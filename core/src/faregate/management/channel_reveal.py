"""Revealing a channel's upstream key (new-api's ``POST /api/channel/{id}/key``): root only,
after a secure verification within the last five minutes (``POST /api/verify``), never
cached, and written to the logs as a management event, so an operator can see who read
which key and when. Every other answer about channels leaves the key out."""

from __future__ import annotations

import time

from pydantic import BaseModel
from quart import Blueprint, Response
from quart_schema import document_response

from faregate.db import models as m
from faregate.management.common import fail, gateway, ok, parse_id, require
from faregate.management.verification import secure_verified
from faregate.principals import Principal

blueprint = Blueprint("channel_reveal", __name__)


class RevealedKey(BaseModel):
    key: str


class Revealed(BaseModel):
    success: bool
    message: str
    data: RevealedKey | None = None


@blueprint.post("/api/channel/<channel_id>/key")
@require(m.ROLE_ROOT)
@secure_verified
@document_response(Revealed)
async def reveal_channel_key(channel_id: str, me: Principal) -> Response:
    row = await m.Channel.get_or_none(id=parse_id(channel_id))
    if row is None:
        return fail("channel not found")
    key = gateway().box.decrypt(row.key_enc, f"channel:{row.id}") if row.key_enc else ""
    await m.Log.create(user_id=me.user.id, username=me.user.username, type=m.LOG_MANAGE, channel_id=row.id,
                       created_at=int(time.time()), content=f"revealed the key of channel {row.id} ({row.name})")
    response = ok({"key": key})
    response.headers["Cache-Control"] = "no-store"
    return response
