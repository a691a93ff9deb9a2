"""Model metadata (new-api's ``/api/models/``, admin): what the console and the pricing
page show about a model. A row names one model (``name_rule`` 0) or every model whose
name starts with (1), contains (2) or ends with (3) its ``model_name``. List items carry
new-api's computed fields, from this worker's routing snapshot (enabled channels and
abilities): ``bound_channels``, ``enable_groups``, ``quota_types`` (0 priced by tokens,
1 per call) and, for a rule row, ``matched_models`` / ``matched_count``. Not computed:
new-api's fill-in of an empty ``endpoints`` from the channel types' supported endpoints
(stored ``endpoints`` are shown as they are)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from quart import Blueprint, Response, request
from quart_schema import document_response, validate_request
from tortoise.queryset import QuerySet

from faregate.db import models as m
from faregate.management import model_sync
from faregate.management.common import (
    INT32_MAX,
    BadInput,
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
from faregate.management.vendors import Description, Icon, model_counts
from faregate.principals import Principal

blueprint = Blueprint("model_meta", __name__)

KEYWORD_MAX = 64
NO_NUL = r"^[^\x00]*$"
ModelName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255, pattern=NO_NUL)]
Tags = Annotated[str, StringConstraints(max_length=255, pattern=NO_NUL)]
Endpoints = Annotated[str, StringConstraints(max_length=model_sync.TEXT_MAX, pattern=NO_NUL),
                     Field(description="JSON object or array; empty for none")]
Flag = Annotated[int, Field(ge=0, le=1)]
NameRule = Annotated[int, Field(ge=0, le=3, description="0 exact, 1 prefix, 2 contains, 3 suffix")]
VendorId = Annotated[int, Field(ge=0, le=INT32_MAX, description="0: none")]


def matches(rule: int, pattern: str, name: str) -> bool:
    if rule == 1:
        return name.startswith(pattern)
    if rule == 2:
        return pattern in name
    if rule == 3:
        return name.endswith(pattern)
    return name == pattern


Usage = dict[str, tuple[set[str], set[tuple[str, int]]]]


def usage() -> Usage:
    """model → (groups, {(channel name, type)}) over the enabled routes of this worker."""
    index: Usage = {}
    for group, by_model in gateway().snapshot.routes.items():
        for model, levels in by_model.items():
            groups, channels = index.setdefault(model, (set(), set()))
            groups.add(group)
            channels.update((c.name, c.type) for level in levels for c in level)
    return index


def model_view(row: m.ModelMeta, index: Usage, priced_per_call: Callable[[str], bool]) -> dict[str, Any]:
    names = ([row.model_name] if row.model_name in index else []) if row.name_rule == 0 \
        else sorted(n for n in index if matches(row.name_rule, row.model_name, n))
    groups = sorted({g for n in names for g in index[n][0]})
    channels = sorted({c for n in names for c in index[n][1]})
    view = {"id": row.id, "model_name": row.model_name, "description": row.description, "icon": row.icon,
            "tags": row.tags, "vendor_id": row.vendor_id, "endpoints": row.endpoints, "status": row.status,
            "sync_official": row.sync_official, "name_rule": row.name_rule, "created_time": row.created_time,
            "updated_time": row.updated_time, "bound_channels": [{"name": n, "type": t} for n, t in channels],
            "enable_groups": groups, "quota_types": sorted({1 if priced_per_call(n) else 0 for n in names})}
    if row.name_rule != 0:
        view.update(matched_models=names, matched_count=len(names))
    return view


def views(rows: list[m.ModelMeta]) -> list[dict[str, Any]]:
    index, options = usage(), gateway().snapshot.options

    def priced_per_call(model: str) -> bool:  # found as the relay finds it: new-api's matching name
        return options.price_of(model) is not None

    return [model_view(r, index, priced_per_call) for r in rows]


async def missing_models() -> list[str]:
    """Models some enabled channel serves that no row covers (exactly or by its rule)."""
    rows = await m.ModelMeta.all().values_list("model_name", "name_rule")
    exact = {name for name, rule in rows if rule == 0}
    rules = [(rule, name) for name, rule in rows if rule != 0]
    return sorted(n for n in usage() if n not in exact and not any(matches(r, p, n) for r, p in rules))


class BoundChannelView(Shape):
    name: str
    type: int


class ModelMetaView(Shape):
    id: int
    model_name: str
    description: str
    icon: str
    tags: str
    vendor_id: int
    endpoints: str
    status: int
    sync_official: int
    name_rule: int
    created_time: int
    updated_time: int
    bound_channels: list[BoundChannelView]
    enable_groups: list[str]
    quota_types: list[int]
    matched_models: list[str] | None = Field(default=None, description="a rule row's matches")
    matched_count: int | None = None


class ModelMetaPage(Page[ModelMetaView]):
    vendor_counts: dict[str, int] = Field(description="vendor id → rows (all rows, not only this page)")


def _flag(name: str) -> int | None:
    value = request.args.get(name, "").strip()
    if value in ("", "all"):
        return None
    if value not in ("0", "1"):
        raise BadInput(f"{name} must be 0, 1 or all", status=400)
    return int(value)


async def _page(query: QuerySet[m.ModelMeta]) -> Response:
    for name in ("status", "sync_official"):
        value = _flag(name)
        if value is not None:
            query = query.filter(**{name: value})
    rows, total, page, size = await page_rows(query)
    counts = {str(k): v for k, v in (await model_counts()).items()}
    return ok(page_data(views(rows), total, page, size, vendor_counts=counts))


@blueprint.get("/api/models/")
@require(m.ROLE_ADMIN)
@document_response(Ok[ModelMetaPage])
async def list_models(me: Principal) -> Response:
    """``?status=`` / ``?sync_official=`` (0, 1 or all) filter; newest first."""
    return await _page(m.ModelMeta.all())


@blueprint.get("/api/models/search")
@require(m.ROLE_ADMIN)
@document_response(Ok[ModelMetaPage])
async def search_models(me: Principal) -> Response:
    """``?keyword=`` in the name, description or tags (or an exact id); ``?vendor=`` a
    vendor id, or text its name contains."""
    keyword = query_text("keyword", KEYWORD_MAX)
    vendor = query_text("vendor", KEYWORD_MAX)
    query = m.ModelMeta.all()
    if keyword:
        query = query.filter(keyword_match(keyword, "model_name", "description", "tags"))
    if vendor.isdigit() and len(vendor) < 10:
        query = query.filter(vendor_id=int(vendor))
    elif vendor:
        ids = await m.Vendor.filter(name__icontains=vendor).values_list("id", flat=True)
        query = query.filter(vendor_id__in=list(ids))
    return await _page(query)


@blueprint.get("/api/models/missing")
@require(m.ROLE_ADMIN)
@document_response(Ok[list[str]])
async def get_missing(me: Principal) -> Response:
    return ok(await missing_models())


@blueprint.get("/api/models/<model_id>")
@require(m.ROLE_ADMIN)
@document_response(Ok[ModelMetaView])
async def get_model(model_id: str, me: Principal) -> Response:
    row = await m.ModelMeta.get_or_none(id=parse_id(model_id))
    return ok(views([row])[0]) if row is not None else fail("model not found")


class ModelEcho(Body):
    """What new-api's model form sends beside the writable fields: the vendor's name and icon
    it shows next to ``vendor_id`` (its form's initial values), accepted and ignored."""

    vendor: Annotated[str, Field(max_length=255)] | None = None
    vendor_icon: Annotated[str, Field(max_length=255)] | None = None


class ModelCreate(ModelEcho):
    model_name: ModelName
    description: Description = ""
    icon: Icon = ""
    tags: Tags = ""
    vendor_id: VendorId = 0
    endpoints: Endpoints = ""
    status: Flag = 1
    sync_official: Flag = Field(default=1, description="1: an upstream sync may overwrite this row")
    name_rule: NameRule = 0


class BoundChannelEcho(Body):
    name: Annotated[str, Field(max_length=255)]
    type: INT64


Names = Annotated[list[Annotated[str, Field(max_length=255)]], Field(max_length=10_000)]


class ModelUpdate(ModelEcho):
    """Partial: the fields present are written; with ``?status_only=true`` only ``status``.
    The computed and read-only fields of a listed row (an edit form sends back what it
    loaded) are accepted and ignored."""

    id: RowId
    created_time: INT64 | None = None
    updated_time: INT64 | None = None
    bound_channels: Annotated[list[BoundChannelEcho], Field(max_length=10_000)] | None = None
    enable_groups: Names | None = None
    quota_types: Annotated[list[INT64], Field(max_length=100)] | None = None
    matched_models: Names | None = None
    matched_count: INT64 | None = None
    model_name: ModelName | None = None
    description: Description | None = None
    icon: Icon | None = None
    tags: Tags | None = None
    vendor_id: VendorId | None = None
    endpoints: Endpoints | None = None
    status: Flag | None = None
    sync_official: Flag | None = None
    name_rule: NameRule | None = None


async def _check(fields: dict[str, Any], own_id: int = 0) -> str | None:
    """Why ``fields`` cannot be stored, or None."""
    if fields.get("endpoints"):
        try:
            fields["endpoints"] = model_sync.canonical_endpoints(fields["endpoints"])
        except ValueError:
            return "endpoints must be a JSON object or array"
    if fields.get("vendor_id") and not await m.Vendor.exists(id=fields["vendor_id"]):
        return "vendor not found"
    if "model_name" in fields and await m.ModelMeta.filter(model_name=fields["model_name"]).exclude(id=own_id).exists():
        return "a model with this name already exists"
    return None


@blueprint.post("/api/models/")
@require(m.ROLE_ADMIN)
@validate_request(ModelCreate)
@document_response(Ok[ModelMetaView])
async def create_model(data: ModelCreate, me: Principal) -> Response:
    fields = data.model_dump(exclude=set(ModelEcho.model_fields))
    problem = await _check(fields)
    if problem:
        return fail(problem)
    now = int(time.time())
    row = await m.ModelMeta.create(**fields, created_time=now, updated_time=now)
    return ok(views([row])[0])


@blueprint.put("/api/models/")
@require(m.ROLE_ADMIN)
@validate_request(ModelUpdate)
@document_response(Ok[ModelMetaView])
async def update_model(data: ModelUpdate, me: Principal) -> Response:
    row = await m.ModelMeta.get_or_none(id=data.id)
    if row is None:
        return fail("model not found")
    if request.args.get("status_only", "").lower() in ("true", "1"):
        if data.status is None:
            return fail("status is required", status=400)
        fields: dict[str, Any] = {"status": data.status}
    else:
        writable = set(ModelCreate.model_fields) - set(ModelEcho.model_fields)
        fields = {k: v for k, v in data.model_dump(include=writable, exclude_unset=True).items() if v is not None}
    problem = await _check(fields, row.id)
    if problem:
        return fail(problem)
    if fields:
        await m.ModelMeta.filter(id=row.id).update(**fields, updated_time=int(time.time()))
    return ok(views([await m.ModelMeta.get(id=row.id)])[0])


@blueprint.delete("/api/models/<model_id>")
@require(m.ROLE_ADMIN)
@document_response(Done)
async def delete_model(model_id: str, me: Principal) -> Response:
    deleted = await m.ModelMeta.filter(id=parse_id(model_id)).delete()
    return ok() if deleted else fail("model not found")


# -- upstream sync (model_sync does the reading and the writing) --------------------------
SyncField = Literal["description", "icon", "tags", "vendor", "name_rule", "status", "endpoints"]
Locale = Annotated[str, StringConstraints(max_length=16, pattern=NO_NUL)]


class Overwrite(Body):
    model_name: ModelName
    fields: Annotated[list[SyncField], Field(max_length=len(model_sync.OVERWRITABLE))]


class SyncRequest(Body):
    overwrite: Annotated[list[Overwrite], Field(max_length=10_000)] = []
    locale: Locale = ""
    create: Annotated[list[ModelName] | None, Field(
        max_length=10_000, description="only these of the missing models (default: every one)")] = None


class SyncSource(Shape):
    locale: str
    models_url: str
    vendors_url: str


class SyncOutcome(Shape):
    created_models: int
    created_vendors: int
    updated_models: int
    skipped_models: list[str]
    created_list: list[str]
    updated_list: list[str]
    source: SyncSource


class SyncConflictField(Shape):
    field: str
    local: str | int
    upstream: str | int


class SyncConflict(Shape):
    model_name: str
    fields: list[SyncConflictField]


class SyncPreview(Shape):
    missing: list[str] = Field(description="would be created (no row, upstream knows them)")
    unknown: list[str] = Field(description="no row, and upstream does not know them")
    conflicts: list[SyncConflict] = Field(description="rows open to sync that differ from upstream")
    locked: list[str] = Field(description="rows that differ but have sync_official 0: never overwritten")
    ignored: int = Field(description="malformed upstream entries")
    source: SyncSource


@blueprint.get("/api/models/sync_upstream/preview")
@require(m.ROLE_ADMIN)
@document_response(Ok[SyncPreview])
async def sync_preview(me: Principal) -> Response:
    """``?locale=`` en, zh-CN, zh-TW or ja (otherwise the default list)."""
    locale = request.args.get("locale", "")[:16]
    try:
        catalogue = await model_sync.load(locale)
    except model_sync.UpstreamError as exc:
        return fail(exc.message)
    return ok(await model_sync.preview(catalogue, await missing_models()))


@blueprint.post("/api/models/sync_upstream")
@require(m.ROLE_ADMIN)
@validate_request(SyncRequest)
@document_response(Ok[SyncOutcome])
async def sync_upstream(data: SyncRequest, me: Principal) -> Response:
    """Create the missing models upstream knows (or the ``create`` subset of them) with
    their vendors; overwrite the listed ``fields`` of the ``overwrite`` rows, never of a
    row with ``sync_official`` 0."""
    missing = await missing_models()
    if data.create is not None:
        wanted = set(data.create)
        missing = [n for n in missing if n in wanted]
    overwrite: dict[str, set[str]] = {}
    for item in data.overwrite:
        overwrite.setdefault(item.model_name, set()).update(item.fields)
    if not missing and not overwrite:  # nothing to do: no need to ask upstream
        return ok(model_sync.SyncResult().data(model_sync.source(data.locale)))
    try:
        catalogue = await model_sync.load(data.locale)
    except model_sync.UpstreamError as exc:
        return fail(exc.message)
    result = await model_sync.apply(catalogue, missing, overwrite, int(time.time()))
    return ok(result.data(catalogue.source))
