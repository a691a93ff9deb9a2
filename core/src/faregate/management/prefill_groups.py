"""Prefill groups (new-api's ``/api/prefill_group``, admin): named lists the console offers when
filling in a form: a channel's models (``type`` ``model``), a model's tags (``tag``) or endpoints
(``endpoint``: the endpoint form's JSON text). Names are unique; the list is newest first, as
new-api's, filtered by ``?type=``."""

from __future__ import annotations

import time
from typing import Annotated, Any

from pydantic import Field, StringConstraints
from quart import Blueprint, Response, request
from quart_schema import document_response, validate_request

from faregate import jsonutil
from faregate.db import models as m
from faregate.management.common import BadInput, fail, ok, parse_id, require
from faregate.management.openapi import INT64, Body, Done, Ok, RowId, Shape
from faregate.principals import Principal

blueprint = Blueprint("prefill_groups", __name__)

NO_NUL = r"^[^\x00]*$"
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64, pattern=NO_NUL)]
Kind = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=32, pattern=r"^[\w-]+$")]
Description = Annotated[str, StringConstraints(max_length=255, pattern=NO_NUL)]
#: a list of names (models, tags), or the endpoint form's JSON text, stored as its JSON value
Items = (Annotated[list[Annotated[str, StringConstraints(max_length=255, pattern=NO_NUL)]], Field(max_length=10_000)]
         | Annotated[str, StringConstraints(max_length=65_536, pattern=NO_NUL)])


class PrefillGroupView(Shape):
    id: int
    name: str
    type: str
    items: list[str] | str | None = Field(description="as it was given: a list of names, or the endpoint form's text")
    description: str
    created_time: int
    updated_time: int


def group_view(row: m.PrefillGroup) -> dict[str, Any]:
    try:
        items = jsonutil.loads(row.items) if row.items else None
    except jsonutil.JSONDecodeError:
        items = None
    return {"id": row.id, "name": row.name, "type": row.type, "items": items, "description": row.description,
            "created_time": row.created_time, "updated_time": row.updated_time}


class PrefillGroupCreate(Body):
    """``{name, type, items, description}``; the loaded group's read-only fields, sent back by
    the console's edit form, are accepted and ignored."""

    name: Name
    type: Kind
    items: Items | None = None
    description: Description = ""
    created_time: INT64 | None = None
    updated_time: INT64 | None = None


class PrefillGroupUpdate(PrefillGroupCreate):
    """new-api's update writes the whole group: every field as sent."""

    id: RowId


@blueprint.get("/api/prefill_group/")
@require(m.ROLE_ADMIN)
@document_response(Ok[list[PrefillGroupView]])
async def list_groups(me: Principal) -> Response:
    """Every group, newest change first; ``?type=model|tag|endpoint`` keeps one kind."""
    query = m.PrefillGroup.all()
    kind = request.args.get("type", "").strip()
    if kind:
        if len(kind) > 32:
            raise BadInput("type must be at most 32 characters", status=400)
        query = query.filter(type=kind)
    return ok([group_view(r) for r in await query.order_by("-updated_time", "-id")])


async def _name_taken(name: str, own_id: int = 0) -> bool:
    return await m.PrefillGroup.filter(name=name).exclude(id=own_id).exists()


def _columns(data: PrefillGroupCreate) -> dict[str, Any]:
    items = "" if data.items is None else jsonutil.dumps_str(data.items)
    return {"name": data.name, "type": data.type, "items": items, "description": data.description}


@blueprint.post("/api/prefill_group/")
@require(m.ROLE_ADMIN)
@validate_request(PrefillGroupCreate)
@document_response(Ok[PrefillGroupView])
async def create_group(data: PrefillGroupCreate, me: Principal) -> Response:
    if await _name_taken(data.name):
        return fail("a group with this name already exists")
    now = int(time.time())
    # a concurrent create of the same name fails on the unique index: guarded() answers it
    row = await m.PrefillGroup.create(**_columns(data), created_time=now, updated_time=now)
    return ok(group_view(row))


@blueprint.put("/api/prefill_group/")
@require(m.ROLE_ADMIN)
@validate_request(PrefillGroupUpdate)
@document_response(Ok[PrefillGroupView])
async def update_group(data: PrefillGroupUpdate, me: Principal) -> Response:
    if await _name_taken(data.name, data.id):
        return fail("a group with this name already exists")
    if not await m.PrefillGroup.filter(id=data.id).update(**_columns(data), updated_time=int(time.time())):
        return fail("group not found")
    return ok(group_view(await m.PrefillGroup.get(id=data.id)))


@blueprint.delete("/api/prefill_group/<group_id>")
@require(m.ROLE_ADMIN)
@document_response(Done)
async def delete_group(group_id: str, me: Principal) -> Response:
    deleted = await m.PrefillGroup.filter(id=parse_id(group_id)).delete()
    return ok() if deleted else fail("group not found")
