"""API keys ("tokens") of the calling user: list, get, create, update, delete, and
reveal the full key to its owner."""

from __future__ import annotations

import time
from typing import Any

from quart import Blueprint, Response, request
from tortoise.transactions import in_transaction

from faregate.db import models as m
from faregate.management.common import fail, gateway, json_body, ok, page_data, paging, require
from faregate.security.crypto import key_hash, mask_key, new_api_key

blueprint = Blueprint("tokens", __name__)

MAX_TOKENS_PER_USER = 1000
MAX_REMAIN_QUOTA = 1_000_000_000 * 500_000


async def token_view(row: m.Token) -> dict[str, Any]:
    held = await gateway().ledger.held_for("token", row.id) if not row.unlimited_quota else 0
    return {
        "id": row.id, "user_id": row.user_id, "key": row.key_mask, "status": row.status, "name": row.name,
        "created_time": row.created_time, "accessed_time": row.accessed_time, "expired_time": row.expired_time,
        "remain_quota": row.remain_quota + held, "unlimited_quota": row.unlimited_quota,
        "used_quota": row.used_quota, "model_limits_enabled": row.model_limits_enabled,
        "model_limits": row.model_limits, "allow_ips": row.allow_ips, "group": row.group,
        "cross_group_retry": row.cross_group_retry,
    }


def _fields(body: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    out: dict[str, Any] = {}
    if "name" in body:
        name = body["name"]
        if not isinstance(name, str) or len(name) > 50:
            return {}, "name must be a string of at most 50 characters"
        out["name"] = name
    for key in ("remain_quota", "expired_time"):
        if key in body:
            try:
                out[key] = int(body[key])
            except (TypeError, ValueError):
                return {}, f"{key} must be an integer"
    if "remain_quota" in out and not 0 <= out["remain_quota"] <= MAX_REMAIN_QUOTA:
        return {}, "remain_quota is out of range"
    if "expired_time" in out and out["expired_time"] != -1 and out["expired_time"] < time.time():
        return {}, "the expiry time is in the past"
    for key in ("unlimited_quota", "model_limits_enabled", "cross_group_retry"):
        if key in body:
            out[key] = bool(body[key])
    for key in ("model_limits", "allow_ips", "group"):
        if key in body:
            value = body[key]
            if value is None:
                value = ""
            if not isinstance(value, str):
                return {}, f"{key} must be a string"
            out[key] = value
    if "status" in body:
        try:
            out["status"] = int(body["status"])
        except (TypeError, ValueError):
            return {}, "status must be an integer"
    return out, None


@blueprint.get("/api/token/")
@require(m.ROLE_USER)
async def list_tokens(me) -> Response:
    page, size = paging()
    query = m.Token.filter(user_id=me.user.id)
    total = await query.count()
    rows = await query.order_by("-id").offset((page - 1) * size).limit(size)
    return ok(page_data([await token_view(r) for r in rows], total, page, size))


@blueprint.get("/api/token/<int:token_id>")
@require(m.ROLE_USER)
async def get_token(token_id: int, me) -> Response:
    row = await m.Token.get_or_none(id=token_id, user_id=me.user.id)
    if row is None:
        return fail("token not found")
    return ok(await token_view(row))


@blueprint.post("/api/token/")
@require(m.ROLE_USER)
async def create_token(me) -> Response:
    body = await json_body()
    if body is None:
        return fail("invalid JSON body")
    fields, error = _fields(body)
    if error:
        return fail(error)
    fields.pop("status", None)
    if await m.Token.filter(user_id=me.user.id).count() >= MAX_TOKENS_PER_USER:
        return fail(f"at most {MAX_TOKENS_PER_USER} API keys per user")
    gw = gateway()
    key = new_api_key()
    row = await m.Token.create(user_id=me.user.id, key_hash=key_hash(key), key_enc="", key_mask=mask_key(key),
                               created_time=int(time.time()), **fields)
    row.key_enc = gw.box.encrypt(key, f"token:{row.id}")
    await row.save(update_fields=["key_enc"])
    await gw.feed.publish("token", row.id)
    return ok(await token_view(row))


@blueprint.put("/api/token/")
@require(m.ROLE_USER)
async def update_token(me) -> Response:
    body = await json_body()
    if body is None:
        return fail("invalid JSON body")
    try:
        token_id = int(body.get("id"))
    except (TypeError, ValueError):
        return fail("id is required")
    row = await m.Token.get_or_none(id=token_id, user_id=me.user.id)
    if row is None:
        return fail("token not found")
    fields, error = _fields(body)
    if error:
        return fail(error)
    if request.args.get("status_only"):
        fields = {"status": fields["status"]} if "status" in fields else {}
    if fields.get("status") == m.TOKEN_ENABLED:
        expires = fields.get("expired_time", row.expired_time)
        if expires != -1 and expires < time.time():
            return fail("the key has expired; change its expiry time first")
        unlimited = fields.get("unlimited_quota", row.unlimited_quota)
        held = await gateway().ledger.held_for("token", row.id)
        if not unlimited and fields.get("remain_quota", row.remain_quota) + held <= 0:
            return fail("the key's quota is used up; raise it first")
    if "remain_quota" in fields:
        # the stored balance excludes quota leased by workers: set the total the owner asked for
        async with in_transaction() as conn:
            held = await gateway().ledger.held_for("token", row.id)
            await m.Token.filter(id=row.id).using_db(conn).update(remain_quota=fields.pop("remain_quota") - held)
    if fields:
        await m.Token.filter(id=row.id).update(**fields)
    await gateway().feed.publish("token", row.id)
    return ok(await token_view(await m.Token.get(id=row.id)))


@blueprint.delete("/api/token/<int:token_id>")
@require(m.ROLE_USER)
async def delete_token(token_id: int, me) -> Response:
    deleted = await m.Token.filter(id=token_id, user_id=me.user.id).delete()
    if not deleted:
        return fail("token not found")
    await gateway().feed.publish("token", token_id)
    return ok()


@blueprint.post("/api/token/<int:token_id>/key")
@require(m.ROLE_USER)
async def reveal_key(token_id: int, me) -> Response:
    """The full key (without ``sk-``), to its owner only."""
    row = await m.Token.get_or_none(id=token_id, user_id=me.user.id)
    if row is None:
        return fail("token not found")
    key = gateway().box.decrypt(row.key_enc, f"token:{row.id}")
    response = ok({"key": key})
    response.headers["Cache-Control"] = "no-store"
    return response
