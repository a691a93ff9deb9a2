"""Vendors (new-api's ``/api/vendors``, admin): who makes a model, shown beside model
metadata. Names are unique; a vendor's list entry carries how many models name it."""

from __future__ import annotations

import time
from typing import Annotated, Any

from pydantic import Field, StringConstraints
from quart import Blueprint, Response
from quart_schema import document_response, validate_request
from tortoise.functions import Count
from tortoise.queryset import QuerySet
from tortoise.transactions import in_transaction

from faregate.db import models as m
from faregate.management.common import fail, keyword_match, ok, page_data, page_rows, parse_id, query_text, require
from faregate.management.openapi import INT64, Body, Done, Ok, Page, RowId, Shape
from faregate.principals import Principal

blueprint = Blueprint("vendors", __name__)

NAME_MAX = 128
ICON_MAX = 128
DESCRIPTION_MAX = 10_000
KEYWORD_MAX = 64

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=NAME_MAX,
                                        pattern=r"^[^\x00]*$")]
Icon = Annotated[str, StringConstraints(max_length=ICON_MAX, pattern=r"^[^\x00]*$")]
Description = Annotated[str, StringConstraints(max_length=DESCRIPTION_MAX, pattern=r"^[^\x00]*$")]
Status = Annotated[int, Field(ge=0, le=1, description="1 enabled, 0 disabled")]


async def model_counts() -> dict[int, int]:
    """vendor id → how many model metadata rows name it (0: rows without a vendor)."""
    rows = await m.ModelMeta.all().group_by("vendor_id").annotate(n=Count("id")).values("vendor_id", "n")
    return {int(r["vendor_id"]): int(r["n"]) for r in rows}


def vendor_view(row: m.Vendor, count: int = 0) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "description": row.description, "icon": row.icon,
            "status": row.status, "created_time": row.created_time, "updated_time": row.updated_time,
            "model_count": count}


class VendorView(Shape):
    id: int
    name: str
    description: str
    icon: str
    status: int
    created_time: int
    updated_time: int
    model_count: int


async def _page(query: QuerySet[m.Vendor]) -> Response:
    rows, total, page, size = await page_rows(query)
    counts = await model_counts()
    return ok(page_data([vendor_view(r, counts.get(r.id, 0)) for r in rows], total, page, size))


@blueprint.get("/api/vendors/")
@require(m.ROLE_ADMIN)
@document_response(Ok[Page[VendorView]])
async def list_vendors(me: Principal) -> Response:
    return await _page(m.Vendor.all())


@blueprint.get("/api/vendors/search")
@require(m.ROLE_ADMIN)
@document_response(Ok[Page[VendorView]])
async def search_vendors(me: Principal) -> Response:
    """``?keyword=``: name or description contains it (wildcards literal), or an exact id."""
    keyword = query_text("keyword", KEYWORD_MAX)
    query = m.Vendor.all()
    if keyword:
        query = query.filter(keyword_match(keyword, "name", "description"))
    return await _page(query)


@blueprint.get("/api/vendors/<vendor_id>")
@require(m.ROLE_ADMIN)
@document_response(Ok[VendorView])
async def get_vendor(vendor_id: str, me: Principal) -> Response:
    row = await m.Vendor.get_or_none(id=parse_id(vendor_id))
    if row is None:
        return fail("vendor not found")
    return ok(vendor_view(row, await m.ModelMeta.filter(vendor_id=row.id).count()))


class VendorCreate(Body):
    name: Name
    description: Description = ""
    icon: Icon = ""
    status: Status = 1


class VendorUpdate(Body):
    """Partial: the fields present are written. The read-only fields of a listed vendor
    (an edit form sends back what it loaded) are accepted and ignored."""

    id: RowId
    name: Name | None = None
    description: Description | None = None
    icon: Icon | None = None
    status: Status | None = None
    created_time: INT64 | None = None
    updated_time: INT64 | None = None
    model_count: INT64 | None = None


async def _name_taken(name: str, own_id: int = 0) -> bool:
    return await m.Vendor.filter(name=name).exclude(id=own_id).exists()


@blueprint.post("/api/vendors/")
@require(m.ROLE_ADMIN)
@validate_request(VendorCreate)
@document_response(Ok[VendorView])
async def create_vendor(data: VendorCreate, me: Principal) -> Response:
    if await _name_taken(data.name):
        return fail("a vendor with this name already exists")
    now = int(time.time())
    # a concurrent create of the same name fails on the unique index: guarded() answers it
    row = await m.Vendor.create(name=data.name, description=data.description, icon=data.icon, status=data.status,
                                created_time=now, updated_time=now)
    return ok(vendor_view(row))


@blueprint.put("/api/vendors/")
@require(m.ROLE_ADMIN)
@validate_request(VendorUpdate)
@document_response(Ok[VendorView])
async def update_vendor(data: VendorUpdate, me: Principal) -> Response:
    row = await m.Vendor.get_or_none(id=data.id)
    if row is None:
        return fail("vendor not found")
    writable = {"name", "description", "icon", "status"}
    fields = {k: v for k, v in data.model_dump(include=writable, exclude_unset=True).items() if v is not None}
    if "name" in fields and await _name_taken(fields["name"], row.id):
        return fail("a vendor with this name already exists")
    if fields:
        await m.Vendor.filter(id=row.id).update(**fields, updated_time=int(time.time()))
    row = await m.Vendor.get(id=row.id)
    return ok(vendor_view(row, await m.ModelMeta.filter(vendor_id=row.id).count()))


@blueprint.delete("/api/vendors/<vendor_id>")
@require(m.ROLE_ADMIN)
@document_response(Done)
async def delete_vendor(vendor_id: str, me: Principal) -> Response:
    """The vendor's models are kept, without a vendor (new-api leaves them pointing at the
    deleted id, which then names nothing)."""
    vid = parse_id(vendor_id)
    async with in_transaction() as conn:
        deleted = await m.Vendor.filter(id=vid).using_db(conn).delete()
        if deleted:
            await m.ModelMeta.filter(vendor_id=vid).using_db(conn).update(vendor_id=0)
    return ok() if deleted else fail("vendor not found")
