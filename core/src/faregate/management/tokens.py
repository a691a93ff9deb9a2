"""API keys ("tokens") of the calling user: list, search, get, create, update,
delete, and reveal the full key to its owner."""

from __future__ import annotations

import time
from typing import Annotated, Any

from pydantic import Field
from quart import Blueprint, Response, request
from quart_schema import document_response, validate_request
from tortoise.expressions import F, Q

from faregate.accounts.key_options import KeyCapReached, issue_key_under_cap
from faregate.billing.leases import held_of, row_with_held, with_held
from faregate.db import models as m
from faregate.management.common import (
    BadInput,
    fail,
    gateway,
    ok,
    page_data,
    page_rows,
    paging,
    parse_id,
    require,
)
from faregate.management.openapi import INT64, Body, Done, IdList, Ok, Page, RowId, Shape
from faregate.principals import Principal
from faregate.security.crypto import key_hash

blueprint = Blueprint("tokens", __name__)

MAX_REMAIN_QUOTA = 1_000_000_000 * 500_000
SEARCH_LIMIT = 100
KEY_LENGTH = 48
#: a key's rate limits fit a 32-bit column (new-api's bound on its rate limit counts)
MAX_LIMIT = 2**31 - 1


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
        "rpm_limit": row.rpm_limit, "tpm_limit": row.tpm_limit, "max_parallel_requests": row.max_parallel_requests,
    }


def token_views(rows: list[m.Token]) -> list[dict[str, Any]]:
    """Views of keys read through :func:`~faregate.billing.leases.with_held` (each row with its
    leases' holdings in one statement: two reads showed a flush's quota twice or not at all)."""
    return [_view(r, held_of(r)) for r in rows]


async def token_view(token_id: int) -> dict[str, Any]:
    """The view of a key that exists, read in one statement."""
    row = await with_held("token", m.Token.filter(id=token_id)).get()
    return _view(row, held_of(row))


class TokenView(Shape):
    id: int
    user_id: int
    key: str
    status: int
    name: str
    created_time: int
    accessed_time: int
    expired_time: int
    remain_quota: int
    unlimited_quota: bool
    used_quota: int
    model_limits_enabled: bool
    model_limits: str
    allow_ips: str
    group: str
    cross_group_retry: bool
    rpm_limit: int
    tpm_limit: int
    max_parallel_requests: int


#: comma-separated model names, newline-separated IPs: generous, but bounded
LIST_MAX = 65_536


class TokenFields(Body):
    """The writable fields; absent or null leaves one unchanged. new-api's UI sends the whole
    key it loaded (or its form), so the read-only fields and the form's own are accepted
    and ignored."""

    name: Annotated[str, Field(max_length=50)] | None = None
    remain_quota: Annotated[int, Field(ge=0, le=MAX_REMAIN_QUOTA)] | None = None
    expired_time: Annotated[int, Field(ge=-1, le=2**63 - 1, description="unix seconds; -1: never")] | None = None
    unlimited_quota: bool | None = None
    model_limits_enabled: bool | None = None
    model_limits: Annotated[str, Field(max_length=LIST_MAX)] | None = None
    allow_ips: Annotated[str, Field(max_length=LIST_MAX)] | None = None
    group: Annotated[str, Field(max_length=64)] | None = None
    cross_group_retry: bool | None = None
    # the key's own rate limits (LiteLLM's names; 0: none of its own, the group's KeyRateLimitGroup still applies)
    rpm_limit: Annotated[int, Field(ge=0, le=MAX_LIMIT, description="requests per minute; 0: none")] | None = None
    tpm_limit: Annotated[int, Field(ge=0, le=MAX_LIMIT, description="tokens per minute; 0: none")] | None = None
    max_parallel_requests: Annotated[int, Field(ge=0, le=MAX_LIMIT,
                                                description="requests at once; 0: none")] | None = None
    status: Annotated[int, Field(ge=m.TOKEN_ENABLED, le=m.TOKEN_EXHAUSTED,
                                 description="1 enabled, 2 disabled, 3 expired, 4 exhausted")] | None = None
    # read-only, ignored
    user_id: INT64 | None = None
    key: Annotated[str, Field(max_length=64)] | None = None
    created_time: INT64 | None = None
    accessed_time: INT64 | None = None
    used_quota: INT64 | None = None
    remain_amount: float | None = None  # the UI's quota shown as money
    DeletedAt: Annotated[str, Field(max_length=64)] | None = None  # GORM's soft-delete column


class TokenCreate(TokenFields):
    """A new key; a ``status`` sent is ignored (a new key is enabled)."""

    id: INT64 | None = None  # ignored


class TokenUpdate(TokenFields):
    id: RowId


def token_fields(data: TokenFields) -> dict[str, Any]:
    """The writable fields the body sets."""
    writable = ("name", "remain_quota", "expired_time", "unlimited_quota", "model_limits_enabled", "model_limits",
                "allow_ips", "group", "cross_group_retry", "status", "rpm_limit", "tpm_limit",
                "max_parallel_requests")
    return {name: getattr(data, name) for name in writable if getattr(data, name) is not None}


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
@document_response(Ok[Page[TokenView]])
async def list_tokens(me: Principal) -> Response:
    rows, total, page, size = await page_rows(with_held("token", m.Token.filter(user_id=me.user.id)))
    return ok(page_data(token_views(rows), total, page, size))


@blueprint.get("/api/token/search")
@require(m.ROLE_USER)
@document_response(Ok[Page[TokenView]])
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
    query = with_held("token", m.Token.filter(user_id=me.user.id))  # count() drops the leases' subquery
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
    return ok(page_data(token_views(rows), total, page, size))


@blueprint.get("/api/token/<token_id>")
@require(m.ROLE_USER)
@document_response(Ok[TokenView])
async def get_token(token_id: str, me: Principal) -> Response:
    row = await with_held("token", m.Token.filter(id=parse_id(token_id), user_id=me.user.id)).first()
    if row is None:
        return fail("token not found")
    return ok(token_views([row])[0])


@blueprint.post("/api/token/")
@require(m.ROLE_USER)
@validate_request(TokenCreate)
@document_response(Ok[TokenView])
async def create_token(data: TokenCreate, me: Principal) -> Response:
    fields = token_fields(data)
    fields.pop("status", None)
    check_group(fields, me)
    expires = fields.get("expired_time", -1)
    if expires != -1 and expires < time.time():
        return fail("the expiry time is in the past")
    gw = gateway()
    try:
        row, _ = await issue_key_under_cap(gw.box, gw.snapshot.options, user_id=me.user.id, **fields)
    except KeyCapReached as refused:
        return fail(str(refused))
    await gw.feed.publish("token", row.id)
    return ok(await token_view(row.id))


@blueprint.put("/api/token/")
@require(m.ROLE_USER)
@validate_request(TokenUpdate)
@document_response(Ok[TokenView])
async def update_token(data: TokenUpdate, me: Principal) -> Response:
    """Partial update (absent fields keep their value); ``?status_only=1`` changes
    only the status. An expired or exhausted key cannot be re-enabled."""
    fields = token_fields(data)
    # with its leases' holdings, in one statement: whether the key is exhausted is decided on
    # one instant's balance (a flush between two reads showed its quota twice or not at all)
    row = await with_held("token", m.Token.filter(id=data.id, user_id=me.user.id)).first()
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
        if not unlimited and fields.get("remain_quota", row.remain_quota + held_of(row)) <= 0:
            return fail("the key's quota is used up; raise it first")
    if "remain_quota" in fields:
        # the stored balance excludes quota leased by workers: the owner asks for a total, so
        # apply its difference from what the balance and the leases hold now (one read): a
        # lease taken or returned meanwhile still adds up, where setting the column to the
        # total less a lease read apart created or lost that lease's quota
        asked = fields.pop("remain_quota")
        now = await row_with_held("token", row.id, "remain_quota")
        if now is not None:
            fields["remain_quota"] = F("remain_quota") + (asked - now["remain_quota"] - now["held"])
    if fields:
        await m.Token.filter(id=row.id).update(**fields)
    await gw.feed.publish("token", row.id)
    return ok(await token_view(row.id))


@blueprint.delete("/api/token/<token_id>")
@require(m.ROLE_USER)
@document_response(Done)
async def delete_token(token_id: str, me: Principal) -> Response:
    ref = parse_id(token_id)
    deleted = await m.Token.filter(id=ref, user_id=me.user.id).delete()
    if not deleted:
        return fail("token not found")
    await gateway().feed.publish("token", ref)
    return ok()


class TokenKey(Shape):
    key: str


@blueprint.post("/api/token/<token_id>/key")
@require(m.ROLE_USER)
@document_response(Ok[TokenKey])
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
@document_response(Ok[int])
async def batch_delete(data: IdList, me: Principal) -> Response:
    """``{ids}``: the caller's keys among them are deleted; the count."""
    ids = data.ids
    owned = [t.id for t in await m.Token.filter(id__in=ids, user_id=me.user.id).only("id")]
    deleted = await m.Token.filter(id__in=owned).delete() if owned else 0
    await gateway().feed.publish_many("token", owned)
    return ok(deleted)


class TokenKeys(Shape):
    keys: dict[str, str]


@blueprint.post("/api/token/batch/keys")
@require(m.ROLE_USER)
@validate_request(IdList)
@document_response(Ok[TokenKeys])
async def batch_reveal(data: IdList, me: Principal) -> Response:
    """``{ids}`` (at most 100) → ``{keys: {id: key}}`` for the caller's own keys only."""
    ids = data.ids
    box = gateway().box
    rows = await m.Token.filter(id__in=ids, user_id=me.user.id)
    response = ok({"keys": {str(r.id): box.decrypt(r.key_enc, f"token:{r.id}") for r in rows}})
    response.headers["Cache-Control"] = "no-store"
    return response
