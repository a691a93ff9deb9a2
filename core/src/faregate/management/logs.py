"""Logs (new-api's ``/api/log``): all (admin) and self (user) with filters, stats, history
deletion, and the calling key's own logs and usage (``/api/log/token``,
``/api/usage/token``, authenticated by the API key itself, read-only)."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, cast

from quart import Blueprint, Response, request
from quart_schema import document_response
from tortoise.functions import Count, Sum
from tortoise.queryset import QuerySet

from faregate import jsonutil
from faregate.db import models as m
from faregate.management.common import (
    ACCESS,
    INT32_MAX,
    TIME_MAX,
    Args,
    fail,
    gateway,
    guarded,
    ok,
    page_data,
    paging,
    public,
    query_int,
    query_text,
    require,
)
from faregate.management.openapi import Ok, Page, Shape, document_stream
from faregate.principals import Principal, TokenEntry, bearer_token, split_api_key
from faregate.state.snapshot import ChannelEntry

blueprint = Blueprint("logs", __name__)

#: rows deleted per statement: keeps each lock short on a busy table
DELETE_BATCH = 1000
#: the most rows ``/api/log/token`` returns (new-api: the newest 100)
TOKEN_LOG_LIMIT = 100
TEXT_FILTERS = {"username": 64, "token_name": 64, "model_name": 255, "group": 64, "request_id": 64}
#: a list's ``total`` counts at most this many rows. An exact ``COUNT(*)`` of a weakly filtered
#: log table is a scan of every matching index entry (seconds at 10 million rows on InnoDB and
#: PostgreSQL, on every page view); past the cap the total says "at least this many" (see
#: ``log_page``). None: count exactly.
COUNT_CAP: int | None = 10_000

#: newest first. new-api orders by id alone; created_at first lets the (filter, created_at)
#: indexes serve a time range and the order together (by id, a range days back is found by
#: reading every newer row: 17 s at 10 million rows on MariaDB). The two orders differ only
#: for rows written out of time order (batched writes from several workers), by seconds.
LIST_ORDER = ("-created_at", "-id")
DEEP_PAGE_BY_IDS = True  # see log_page; False: a plain OFFSET (the benchmark's "before")

# ---- the answers' shapes (documentation: the views build the same dicts) ----------------
class LogItem(Shape):
    id: int
    user_id: int
    created_at: int
    type: int
    content: str
    username: str
    token_name: str
    model_name: str
    quota: int
    prompt_tokens: int
    completion_tokens: int
    use_time: int
    is_stream: bool
    token_id: int
    group: str
    ip: str
    request_id: str
    other: str


class AdminLogItem(LogItem):
    channel: int
    channel_name: str


class Stat(Shape):
    quota: int
    rpm: int
    tpm: int


class TokenUsageData(Shape):
    object: str
    name: str
    total_granted: int
    total_used: int
    total_available: int
    unlimited_quota: bool
    model_limits: dict[str, bool]
    model_limits_enabled: bool
    expires_at: int


class TokenUsage(Shape):  # new-api's own shape here, not the management envelope
    code: bool
    message: str
    data: TokenUsageData


def filtered(query: QuerySet[m.Log], args: Args, *, admin: bool) -> QuerySet[m.Log]:
    """new-api's log filters; users cannot filter by username or channel (they see only
    their own rows, and channels are the operator's business)."""
    kind = query_int("type", 0, 6, args=args)
    if kind:  # 0: every type
        query = query.filter(type=kind)
    for name, bound in (("start_timestamp", "gte"), ("end_timestamp", "lte")):
        when = query_int(name, 0, TIME_MAX, args=args)
        if when:
            query = query.filter(**{f"created_at__{bound}": when})
    for name, max_len in TEXT_FILTERS.items():
        if name == "username" and not admin:
            continue
        value = query_text(name, max_len, args=args, strip=False)  # exact matches: kept as sent
        if value:
            query = query.filter(**{name: value})
    if admin:
        channel = query_int("channel", 0, INT32_MAX, args=args)
        if channel:
            query = query.filter(channel_id=channel)
    return query


def log_view(row: m.Log, *, admin: bool, channels: Mapping[int, ChannelEntry] | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": row.id, "user_id": row.user_id, "created_at": row.created_at, "type": row.type,
        "content": row.content, "username": row.username, "token_name": row.token_name,
        "model_name": row.model_name, "quota": row.quota, "prompt_tokens": row.prompt_tokens,
        "completion_tokens": row.completion_tokens, "use_time": row.use_time, "is_stream": row.is_stream,
        "token_id": row.token_id, "group": row.group, "ip": row.ip, "request_id": row.request_id or "",
        "other": row.other,
    }
    if admin:
        channel = (gateway().snapshot.channels if channels is None else channels).get(row.channel_id)
        view["channel"] = row.channel_id
        view["channel_name"] = channel.name if channel else ""
    else:  # which channels served a user's requests is the operator's business (as new-api)
        view["other"] = _without_admin_info(row.other)
    return view


def _without_admin_info(other: str) -> str:
    if "admin_info" not in other:
        return other
    try:
        details = jsonutil.loads(other)
    except jsonutil.JSONDecodeError:
        return ""
    if isinstance(details, dict):
        details.pop("admin_info", None)
        return jsonutil.dumps_str(details)
    return other


async def count_capped(query: QuerySet[m.Log], cap: int | None) -> int:
    """``COUNT(*)`` of at most ``cap + 1`` rows (all of them when ``cap`` is None): the
    database stops reading as soon as it has seen ``cap + 1`` matching index entries."""
    if cap is None:
        return await query.count()
    inner = query.limit(cap + 1).values_list("id", flat=True)
    inner.sql()  # builds inner.query; the values stay parameters (never inlined into the SQL)
    sql, params = inner.query.get_parameterized_sql()
    _, rows = await m.Log._meta.db.execute_query(f"SELECT COUNT(*) AS n FROM ({sql}) AS capped", params)
    return int(rows[0]["n"]) if rows else 0


async def log_page(query: QuerySet[m.Log], page: int, size: int) -> tuple[list[m.Log], int]:
    """One page, newest first (``LIST_ORDER``), and the total (capped at ``COUNT_CAP``)."""
    offset = (page - 1) * size
    ordered = query.order_by(*LIST_ORDER)
    if offset and DEEP_PAGE_BY_IDS:
        # skip rows in the index alone (ids only), then read the page's rows: a plain
        # OFFSET reads every skipped row in full (half a second at p=1000 on InnoDB)
        ids = cast("list[int]", await ordered.offset(offset).limit(size).values_list("id", flat=True))
        found = {r.id: r for r in await m.Log.filter(id__in=ids)} if ids else {}
        rows = [found[i] for i in ids if i in found]
    else:
        rows = list(await ordered.limit(size))
    if 0 < len(rows) < size or (offset == 0 and not rows):
        return rows, offset + len(rows)  # the last page: the total is known without counting
    total = await count_capped(query, COUNT_CAP)
    if COUNT_CAP is not None and total > COUNT_CAP:
        # "more than COUNT_CAP": at least the cap, and always one row past a full page, so a
        # pager built on the total (new-api's) can go on to the next page
        total = max(COUNT_CAP, offset + len(rows) + (1 if len(rows) == size else 0))
    return rows, total


async def _page(query: QuerySet[m.Log], *, admin: bool) -> Response:
    page, size = paging()
    rows, total = await log_page(query, page, size)
    return ok(page_data([log_view(r, admin=admin) for r in rows], total, page, size))


async def stat_figures(query: QuerySet[m.Log], now: int) -> dict[str, int]:
    """``{quota, rpm, tpm}``: quota spent over the filtered range; requests and tokens in
    the 60 seconds before ``now`` (new-api's figures)."""
    consume = query.filter(type=m.LOG_CONSUME)
    total = await consume.annotate(q=Sum("quota")).values("q")
    recent = consume.filter(created_at__gte=now - 60)
    figures = await recent.annotate(n=Count("id"), p=Sum("prompt_tokens"), c=Sum("completion_tokens")).values(
        "n", "p", "c")
    last = figures[0] if figures else {}
    return {"quota": int((total[0]["q"] if total else 0) or 0), "rpm": int(last.get("n") or 0),
            "tpm": int(last.get("p") or 0) + int(last.get("c") or 0)}


@blueprint.get("/api/log/")
@require(m.ROLE_ADMIN)
@document_response(Ok[Page[AdminLogItem]])
async def all_logs(me: Principal) -> Response:
    """Every user's logs, newest first; filters ``type``, ``start_timestamp``, ``end_timestamp``,
    ``username``, ``token_name``, ``model_name``, ``channel``, ``group``, ``request_id``."""
    return await _page(filtered(m.Log.all(), request.args, admin=True), admin=True)


@blueprint.get("/api/log/self")
@require(m.ROLE_USER)
@document_response(Ok[Page[LogItem]])
async def self_logs(me: Principal) -> Response:
    """The caller's logs, newest first; the filters of ``/api/log/`` but ``username`` and ``channel``."""
    return await _page(filtered(m.Log.filter(user_id=me.user.id), request.args, admin=False), admin=False)


@blueprint.get("/api/log/stat")
@require(m.ROLE_ADMIN)
@document_response(Ok[Stat])
async def stat(me: Principal) -> Response:
    return ok(await stat_figures(filtered(m.Log.all(), request.args, admin=True), int(time.time())))


@blueprint.get("/api/log/self/stat")
@require(m.ROLE_USER)
@document_response(Ok[Stat])
async def self_stat(me: Principal) -> Response:
    return ok(await stat_figures(filtered(m.Log.filter(user_id=me.user.id), request.args, admin=False),
                                 int(time.time())))


@blueprint.delete("/api/log/")
@require(m.ROLE_ADMIN)
@document_response(Ok[int])
async def delete_history(me: Principal) -> Response:
    """``?target_timestamp=``: every row older than it, in short batches; the count."""
    target = query_int("target_timestamp", 1, TIME_MAX)
    if target is None:
        return fail("target timestamp is required", status=400)
    deleted = 0
    while True:
        ids = await m.Log.filter(created_at__lt=target).limit(DELETE_BATCH).values_list("id", flat=True)
        if not ids:
            break
        deleted += await m.Log.filter(id__in=list(ids)).delete()
    return ok(deleted)


EXPORT_BATCH = 1000
EXPORT_COLUMNS = ("id", "created_at", "type", "username", "token_name", "model_name", "quota", "prompt_tokens",
                  "completion_tokens", "use_time", "is_stream", "group", "request_id", "content", "other")


async def _export(query: QuerySet[m.Log], *, admin: bool) -> Response:
    """The filtered rows, newest first, as CSV or JSON Lines (``?format=csv|jsonl``),
    streamed a batch at a time (keyset paging by id): never the whole table in memory."""
    fmt = request.args.get("format", "jsonl")
    if fmt not in ("csv", "jsonl"):
        return fail("format must be csv or jsonl", status=400)
    columns = (*EXPORT_COLUMNS, "channel") if admin else EXPORT_COLUMNS
    channels = gateway().snapshot.channels  # the generator runs after the request context is gone

    async def rows() -> AsyncIterator[bytes]:
        if fmt == "csv":
            yield _csv_line(columns)
        last: int | None = None
        while True:
            page = query if last is None else query.filter(id__lt=last)
            batch = await page.order_by("-id").limit(EXPORT_BATCH)
            if not batch:
                return
            last = batch[-1].id
            views = [log_view(r, admin=admin, channels=channels) for r in batch]
            if fmt == "csv":
                yield b"".join(_csv_line([v.get(c, "") for c in columns]) for v in views)
            else:
                yield b"".join(jsonutil.dumps({c: v.get(c) for c in columns}) + b"\n" for v in views)

    extension, mime = ("csv", "text/csv") if fmt == "csv" else ("jsonl", "application/x-ndjson")
    response = Response(rows(), content_type=f"{mime}; charset=utf-8")
    response.headers["Content-Disposition"] = f'attachment; filename="logs.{extension}"'
    response.timeout = None  # a large export takes as long as it takes
    return response


def _csv_line(values: Iterable[Any]) -> bytes:
    out = io.StringIO()
    # a cell a spreadsheet would run as a formula (user-chosen key names, model names) is quoted
    csv.writer(out).writerow("'" + v if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") else v
                             for v in values)
    return out.getvalue().encode()


@blueprint.get("/api/log/export")
@require(m.ROLE_ADMIN)
@document_stream("text/csv", "application/x-ndjson")
async def export_all(me: Principal) -> Response:
    return await _export(filtered(m.Log.all(), request.args, admin=True), admin=True)


@blueprint.get("/api/log/self/export")
@require(m.ROLE_USER)
@document_stream("text/csv", "application/x-ndjson")
async def export_self(me: Principal) -> Response:
    return await _export(filtered(m.Log.filter(user_id=me.user.id), request.args, admin=False), admin=False)


@blueprint.get("/api/log/search")
@blueprint.get("/api/log/self/search")
@public
async def deprecated_search() -> Response:
    return fail("this endpoint is deprecated: use /api/log/ or /api/log/self with filters")


# ---- read-only, by API key ----------------------------------------------------------------
TokenView = Callable[[TokenEntry], Awaitable[Response]]


def by_api_key(view: TokenView) -> Callable[[], Awaitable[Response]]:
    """new-api's read-only token auth: the key itself (``Authorization: Bearer sk-…``)
    identifies whose data is read; a disabled, expired or used-up key may still read."""

    async def wrapper() -> Response:
        gw = gateway()
        await gw.feed.catch_up()
        key = split_api_key(bearer_token(cast("Mapping[str, str]", request.headers)) or "")[0]
        token = gw.services.token_for_key(key) if key else None
        if token is None:
            return fail("invalid API key", status=401)
        user = gw.snapshot.users.get(token.user_id)
        if user is None or user.status != m.USER_ENABLED:
            return fail("the user is disabled", status=403)
        return await view(token)

    wrapper.__name__ = view.__name__
    checked = guarded(wrapper)
    setattr(checked, ACCESS, "api_key")
    return checked


async def _token_logs(token: TokenEntry) -> Response:
    query = m.Log.filter(token_id=token.id, user_id=token.user_id)  # the (user_id, created_at) index
    rows = await query.order_by(*LIST_ORDER).limit(TOKEN_LOG_LIMIT)
    return ok([log_view(r, admin=False) for r in rows])


async def _token_usage(token: TokenEntry) -> Response:
    """The key's grant and use, in new-api's ``{code, message, data}`` shape."""
    row = await m.Token.get_or_none(id=token.id)
    if row is None:
        return fail("invalid API key", status=401)
    data = {
        "object": "token_usage", "name": row.name, "total_granted": row.remain_quota + row.used_quota,
        "total_used": row.used_quota, "total_available": row.remain_quota, "unlimited_quota": row.unlimited_quota,
        "model_limits": _limits(row.model_limits) if row.model_limits_enabled else {},
        "model_limits_enabled": row.model_limits_enabled, "expires_at": max(0, row.expired_time),
    }
    return Response(jsonutil.dumps({"code": True, "message": "ok", "data": data}),
                    content_type="application/json")


def _limits(text: str | None) -> dict[str, bool]:
    return {name.strip(): True for name in (text or "").split(",") if name.strip()}


_documented_token_logs = document_response(Ok[list[LogItem]])(by_api_key(_token_logs))
blueprint.add_url_rule("/api/log/token", "token_logs", _documented_token_logs, methods=["GET"])
for _path, _name in (("/api/usage/token", "token_usage"), ("/api/usage/token/", "token_usage_slash")):
    blueprint.add_url_rule(_path, _name, document_response(TokenUsage)(by_api_key(_token_usage)), methods=["GET"])
