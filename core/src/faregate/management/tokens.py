"""API keys ("tokens") of the calling user: list, search, get, create, update,
delete, and reveal the full key to its owner."""

from __future__ import annotations

import time
from typing import Any

from quart import Blueprint, Response, request
from quart_schema import validate_request
from tortoise.expressions import Q
from tortoise.transactions import in_transaction

from faregate.db import models as m
from faregate.management.common import (
    BadInput,
    fail,
    gateway,
    get_bool,
    get_int,
    get_str,
    ok,
    page_data,
    page_rows,
    paging,
    parse_id,
    require,
    require_body,
)
from faregate.management.openapi import IdList
from faregate.principals import Principal
from faregate.security.crypto import key_hash, mask_key, new_api_key

blueprint = Blueprint("tokens", __name__)

MAX_TOKENS_PER_USER = 1000
MAX_REMAIN_QUOTA = 1_000_000_000 * 500_000
SEARCH_LIMIT = 100
TOKEN_STATUSES = (m.TOKEN_ENABLED, m.TOKEN_DISABLED, m.TOKEN_EXPIRED, m.TOKEN_EXHAUSTED)
KEY_LENGTH = 48


def _view(row: m.Token, held: int) -> dict[str, Any]:
    """A token with its key masked (first 4 + ``**********`` + last 4), as new-api.
    ``remain_quota`` includes what workers hold leased from it (still the owner's)."""
    return {
        "id": row.id, "user_id": row.user_id, "key": row.key_mask, "status": row.status, "name": row.name,
        "created_time": row.created_time, "accessed_time": row.accessed_time, "expired_time": row.expired_time,
        "remain_quota": row.remain_quota + (0 if row.unlimited_quota else held),
        "unlimited_quota": row.unlimited_quota, "used_quota": row.used_quota,
        "model_limits_enabled": row.model_limits_enabled, "model_limits": row.model_limits,
        "allow_ips": row.allow_ips, "group": row.group, "cross_group_retry": row.cross_group_retry,
    }


async def token_view(row: m.Token) -> dict[str, Any]:
    return _view(row, await gateway().ledger.held_for("token", row.id))


async def token_views(rows: list[m.Token]) -> list[dict[str, Any]]:
    """Views of a page of tokens, with one lease query rather than one per token."""
    held: dict[int, int] = {}
    if rows:
        leases = await m.QuotaLease.filter(kind="token", ref_id__in=[r.id for r in rows]).values_list(
            "ref_id", "held")
        for ref_id, amount in leases:
            held[ref_id] = held.get(ref_id, 0) + amount
    return [_view(r, held.get(r.id, 0)) for r in rows]


def token_fields(body: dict[str, Any]) -> dict[str, Any]:
    """The writable fields present in ``body``, type-checked (wrong types fail)."""
    out: dict[str, Any] = {}
    name = get_str(body, "name", max_len=50)
    if name is not None:
        out["name"] = name
    remain = get_int(body, "remain_quota", lo=0, hi=MAX_REMAIN_QUOTA)
    if remain is not None:
        out["remain_quota"] = remain
    expires = get_int(body, "expired_time", lo=-1, hi=2**63 - 1)
    if expires is not None:
        out["expired_time"] = expires
    for key in ("unlimited_quota", "model_limits_enabled", "cross_group_retry"):
        value = get_bool(body, key)
        if value is not None:
            out[key] = value
    for key, max_len in (("model_limits", None), ("allow_ips", None), ("group", 64)):
        value = get_str(body, key, max_len=max_len)
        if value is not None:
            out[key] = value
    status = get_int(body, "status")
    if status is not None:
        if status not in TOKEN_STATUSES:
            raise BadInput("status must be 1 (enabled), 2 (disabled), 3 (expired) or 4 (exhausted)")
        out["status"] = status
    return out


def check_group(fields: dict[str, Any], me: Principal) -> None:
    """A key may only name a group its owner may use: no escalation to another group's
    channels and prices."""
    group = fields.get("group")
    if group:
        usable = gateway().snapshot.options.usable_groups(me.user.group)
        if group not in usable:
            raise BadInput(f"group {group} is not usable by this user (usable: {', '.join(sorted(usable))})",
                           status=403)


@blueprint.get("/api/token/")
@require(m.ROLE_USER)
async def list_tokens(me: Principal) -> Response:
    rows, total, page, size = await page_rows(m.Token.filter(user_id=me.user.id))
    return ok(page_data(await token_views(rows), total, page, size))


@blueprint.get("/api/token/search")
@require(m.ROLE_USER)
async def search_tokens(me: Principal) -> Response:
    """``?keyword=`` (name contains) and ``?token=`` (key): keys are stored hashed, so
    a full key matches exactly and a fragment matches the visible first or last 4
    characters. At most 100 results, as new-api."""
    page, size = paging()
    keyword = request.args.get("keyword", "").strip()
    fragment = request.args.get("token", "").strip()
    if fragment.startswith("sk-"):
        fragment = fragment[3:]
    if len(keyword) > 50 or len(fragment) > KEY_LENGTH:
        return fail("search text too long")
    if "\x00" in keyword + fragment:
        return fail("invalid search text")
    query = m.Token.filter(user_id=me.user.id)
    if keyword:
        query = query.filter(name__icontains=keyword)
    if len(fragment) == KEY_LENGTH:
        query = query.filter(key_hash=key_hash(fragment))
    elif fragment:
        if len(fragment) > 4:
            return ok(page_data([], 0, page, size))  # only 4 + 4 characters are kept in clear
        query = query.filter(Q(key_mask__startswith=fragment) | Q(key_mask__endswith=fragment))
    total = min(await query.count(), SEARCH_LIMIT)
    offset = (page - 1) * size
    rows = [] if offset >= total else await query.order_by("-id").offset(offset).limit(min(size, total - offset))
    return ok(page_data(await token_views(rows), total, page, size))


@blueprint.get("/api/token/<token_id>")
@require(m.ROLE_USER)
async def get_token(token_id: str, me: Principal) -> Response:
    row = await m.Token.get_or_none(id=parse_id(token_id), user_id=me.user.id)
    if row is None:
        return fail("token not found")
    return ok(await token_view(row))


@blueprint.post("/api/token/")
@require(m.ROLE_USER)
async def create_token(me: Principal) -> Response:
    body = await require_body()
    fields = token_fields(body)
    fields.pop("status", None)
    check_group(fields, me)
    expires = fields.get("expired_time", -1)
    if expires != -1 and expires < time.time():
        return fail("the expiry time is in the past")
    if await m.Token.filter(user_id=me.user.id).count() >= MAX_TOKENS_PER_USER:
        return fail(f"at most {MAX_TOKENS_PER_USER} API keys per user")
    gw = gateway()
    key = new_api_key()
    async with in_transaction() as conn:
        row = await m.Token.create(user_id=me.user.id, key_hash=key_hash(key), key_enc="", key_mask=mask_key(key),
                                   created_time=int(time.time()), using_db=conn, **fields)
        row.key_enc = gw.box.encrypt(key, f"token:{row.id}")
        await row.save(update_fields=["key_enc"], using_db=conn)
    await gw.feed.publish("token", row.id)
    return ok(await token_view(row))


@blueprint.put("/api/token/")
@require(m.ROLE_USER)
async def update_token(me: Principal) -> Response:
    """Partial update (absent fields keep their value); ``?status_only=1`` changes
    only the status. An expired or exhausted key cannot be re-enabled."""
    body = await require_body()
    token_id = parse_id(body.get("id"), text=False)
    fields = token_fields(body)
    row = await m.Token.get_or_none(id=token_id, user_id=me.user.id)
    if row is None:
        return fail("token not found")
    if request.args.get("status_only"):
        fields = {"status": fields["status"]} if "status" in fields else {}
    check_group(fields, me)
    gw = gateway()
    if fields.get("status") == m.TOKEN_ENABLED:
        expires = fields.get("expired_time", row.expired_time)
        if expires != -1 and expires < time.time():
            return fail("the key has expired; change its expiry time first")
        unlimited = fields.get("unlimited_quota", row.unlimited_quota)
        held = await gw.ledger.held_for("token", row.id)
        if not unlimited and fields.get("remain_quota", row.remain_quota + held) <= 0:
            return fail("the key's quota is used up; raise it first")
    if "remain_quota" in fields:
        # the stored balance excludes quota leased by workers: set the total the owner asked for
        held = await gw.ledger.held_for("token", row.id)
        fields["remain_quota"] -= held
    if fields:
        await m.Token.filter(id=row.id).update(**fields)
    await gw.feed.publish("token", row.id)
    return ok(await token_view(await m.Token.get(id=row.id)))


@blueprint.delete("/api/token/<token_id>")
@require(m.ROLE_USER)
async def delete_token(token_id: str, me: Principal) -> Response:
    ref = parse_id(token_id)
    deleted = await m.Token.filter(id=ref, user_id=me.user.id).delete()
    if not deleted:
        return fail("token not found")
    await gateway().feed.publish("token", ref)
    return ok()


@blueprint.post("/api/token/<token_id>/key")
@require(m.ROLE_USER)
async def reveal_key(token_id: str, me: Principal) -> Response:
    """The full key (without ``sk-``), to its owner only."""
    row = await m.Token.get_or_none(id=parse_id(token_id), user_id=me.user.id)
    if row is None:
        return fail("token not found")
    key = gateway().box.decrypt(row.key_enc, f"token:{row.id}")
    response = ok({"key": key})
    response.headers["Cache-Control"] = "no-store"
    return response


@blueprint.post("/api/token/batch")
@require(m.ROLE_USER)
@validate_request(IdList)
async def batch_delete(data: IdList, me: Principal) -> Response:
    """``{ids}``: the caller's keys among them are deleted; the count."""
    ids = data.ids
    owned = [t.id for t in await m.Token.filter(id__in=ids, user_id=me.user.id).only("id")]
    deleted = await m.Token.filter(id__in=owned).delete() if owned else 0
    for token_id in owned:
        await gateway().feed.publish("token", token_id)
    return ok(deleted)


@blueprint.post("/api/token/batch/keys")
@require(m.ROLE_USER)
@validate_request(IdList)
async def batch_reveal(data: IdList, me: Principal) -> Response:
    """``{ids}`` (at most 100) → ``{keys: {id: key}}`` for the caller's own keys only."""
    ids = data.ids
    box = gateway().box
    rows = await m.Token.filter(id__in=ids, user_id=me.user.id)
    response = ok({"keys": {str(r.id): box.decrypt(r.key_enc, f"token:{r.id}") for r in rows}})
    response.headers["Cache-Control"] = "no-store"
    return response
