"""The dashboard's figures (new-api's ``/api/data``): consumption per model and hour over a
time range, for everyone (admin), per user (admin), or for the caller; and the models each
channel type is known to serve (``GET /api/models``, ``GET /api/channel/models``).

new-api keeps a ``quota_data`` table of hourly sums, filled from memory every few minutes
(lost on a crash, and a second copy of what the logs say). Here the sums are read from the
consume logs themselves, grouped by hour in the database over an index on ``created_at``:
one truth, never behind, and the range is bounded so one call cannot scan the whole table
by accident. The model lists come from the installed providers' catalogues."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from quart import Blueprint, Response, request
from quart_schema import document_response
from tortoise import connections
from tortoise.expressions import RawSQL
from tortoise.functions import Count, Sum
from tortoise.queryset import QuerySet

from faregate.db import models as m
from faregate.management.common import TIME_MAX, BadInput, gateway, ok, query_int, query_text, require
from faregate.management.dashboard_options import ENABLED, OFF_MESSAGE
from faregate.principals import Principal

blueprint = Blueprint("dashboard", __name__)

HOUR = 3600
#: new-api refuses a user's range over one month; an admin's is bounded to a year
SELF_SPAN, ADMIN_SPAN = 30 * 24 * HOUR, 366 * 24 * HOUR
USERNAME_MAX = 64
#: the creation time new-api gives every catalogue model
CATALOG_CREATED = 1626777600


class QuotaRow(BaseModel):
    model_name: str
    created_at: int  # the hour (unix time, a multiple of 3600)
    count: int
    quota: int
    token_used: int
    user_id: int | None = None
    username: str | None = None
    #: only with ``?by_token=true``: the API key's name (rows are then per model, key and hour)
    token_name: str | None = None


class QuotaRows(BaseModel):
    success: bool
    message: str
    data: list[QuotaRow] | None = None


class UserQuotaRow(BaseModel):
    user_id: int
    username: str
    count: int
    quota: int
    token_used: int


class UserQuotaRows(BaseModel):
    success: bool
    message: str
    data: list[UserQuotaRow] | None = None


class CatalogModel(BaseModel):
    id: str
    object: str
    created: int
    owned_by: str


class CatalogModels(BaseModel):
    success: bool
    message: str
    data: list[CatalogModel] | None = None


class ModelsByType(BaseModel):
    success: bool
    message: str
    data: dict[str, list[str]] | None = None


def _hour_bucket() -> RawSQL:
    """``created_at`` truncated to the hour, in each engine's integer arithmetic (MySQL's
    ``/`` is decimal division; ``DIV`` is its integer one)."""
    dialect = connections.get("default").capabilities.dialect
    return RawSQL("(created_at DIV 3600) * 3600" if dialect == "mysql" else "(created_at / 3600) * 3600")


def _range(span: int) -> tuple[int, int]:
    """``start_timestamp`` / ``end_timestamp``, both required (new-api answers 400 without
    them), at most ``span`` seconds apart; none while the dashboard is off (DataExportEnabled)."""
    if not gateway().snapshot.options.value(ENABLED):
        raise BadInput(OFF_MESSAGE)
    bounds = []
    for name in ("start_timestamp", "end_timestamp"):
        value = query_int(name, 0, TIME_MAX)
        if value is None:
            raise BadInput(f"{name} is required: a unix time in seconds", status=400)
        bounds.append(value)
    start, end = bounds
    if end < start:
        raise BadInput("end_timestamp must not be before start_timestamp", status=400)
    if end - start > span:
        raise BadInput(f"the time range must not exceed {span // 86400} days")
    return start, end


def _by_token() -> tuple[str, ...]:
    """``?by_token=true``: the sums are split by API key name too (the console's usage per
    key); new-api has no such parameter, and without it the rows are new-api's."""
    return ("token_name",) if request.args.get("by_token", "").lower() in ("true", "1") else ()


def _consumed(start: int, end: int) -> QuerySet[m.Log]:
    return m.Log.filter(type=m.LOG_CONSUME, created_at__gte=start, created_at__lte=end)


def _summed(query: QuerySet[m.Log]) -> QuerySet[m.Log]:
    """The sums every dashboard figure has: requests, quota, prompt and completion tokens."""
    return query.annotate(n=Count("id"), q=Sum("quota"), p=Sum("prompt_tokens"), c=Sum("completion_tokens"))


def _sums(row: dict[str, Any]) -> dict[str, int]:
    return {"count": int(row["n"] or 0), "quota": int(row["q"] or 0),
            "token_used": int(row["p"] or 0) + int(row["c"] or 0)}


async def consumption_by_model_hour(query: QuerySet[m.Log], *extra: str) -> list[dict[str, Any]]:
    """Sums per (model, hour[, more columns: the user's, the key's name]), oldest hour
    first. The bucket is computed by the database (tested on every engine by the storage
    conformance suite)."""
    groups = ("model_name", "hour", *extra)
    rows = await (_summed(query.annotate(hour=_hour_bucket()))
                  .group_by(*groups).order_by("hour", "model_name").values(*groups, "n", "q", "p", "c"))
    out = []
    for row in rows:
        item: dict[str, Any] = {"model_name": row["model_name"], "created_at": int(row["hour"]), **_sums(row)}
        for name in extra:
            item[name] = row[name]
        out.append(item)
    return out


@blueprint.get("/api/data/")
@require(m.ROLE_ADMIN)
@document_response(QuotaRows)
async def all_quota_data(me: Principal) -> Response:
    """Everyone's consumption per model and hour; ``?username=`` narrows it to one user;
    ``?by_token=true`` splits each row by API key name (``token_name``)."""
    start, end = _range(ADMIN_SPAN)
    username = query_text("username", USERNAME_MAX)
    query = _consumed(start, end)
    if username:
        return ok(await consumption_by_model_hour(query.filter(username=username), "user_id", "username",
                                                  *_by_token()))
    return ok(await consumption_by_model_hour(query, *_by_token()))


@blueprint.get("/api/data/users")
@require(m.ROLE_ADMIN)
@document_response(UserQuotaRows)
async def users_quota_data(me: Principal) -> Response:
    """Consumption per user over the range, the biggest spenders first (at most 100)."""
    start, end = _range(ADMIN_SPAN)
    rows = await (_summed(_consumed(start, end)).group_by("user_id", "username").order_by("-q").limit(100)
                  .values("user_id", "username", "n", "q", "p", "c"))
    return ok([{"user_id": r["user_id"], "username": r["username"], **_sums(r)} for r in rows])


@blueprint.get("/api/data/self")
@require(m.ROLE_USER)
@document_response(QuotaRows)
async def self_quota_data(me: Principal) -> Response:
    """The caller's consumption per model and hour; ``?by_token=true`` splits each row by
    API key name (``token_name``)."""
    start, end = _range(SELF_SPAN)
    return ok(await consumption_by_model_hour(_consumed(start, end).filter(user_id=me.user.id), *_by_token()))


def catalog_by_type() -> dict[str, list[str]]:
    """Channel type → the models its provider is known to serve (``Provider.model_catalog``),
    for every type an installed provider serves."""
    gw = gateway()
    return {str(kind): list(provider.model_catalog.get(kind, ())) for kind, provider in sorted(gw.providers.items())}


@blueprint.get("/api/models")
@require(m.ROLE_USER)
@document_response(ModelsByType)
async def dashboard_models(me: Principal) -> Response:
    """new-api's ``DashboardListModels``: channel type → the models that type is known to
    serve; the console offers them when a channel is made."""
    return ok(catalog_by_type())


@blueprint.get("/api/channel/models")
@require(m.ROLE_ADMIN)
@document_response(CatalogModels)
async def channel_model_catalog(me: Principal) -> Response:
    """new-api's ``ChannelListModels``: every model any installed provider knows, as OpenAI
    model objects owned by the provider's name. A model several providers know (Claude on
    Anthropic, Vertex and Bedrock) is owned by the one of the lowest channel type, whatever
    order the plugins were installed in: its maker's own type comes first."""
    seen: dict[str, dict[str, Any]] = {}
    for provider in sorted(gateway().provider_list, key=lambda p: min(p.channel_types, default=1 << 31)):
        for kind in provider.channel_types:
            for model in provider.model_catalog.get(kind, ()):
                seen.setdefault(model, {"id": model, "object": "model", "created": CATALOG_CREATED,
                                        "owned_by": provider.name})
    return ok(list(seen.values()))

