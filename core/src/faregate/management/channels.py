"""Channels (admin): list, get, add, update, delete. The key is encrypted at rest
and never appears in a list or get view."""

from __future__ import annotations

import time
from typing import Any

from quart import Blueprint, Response, request
from tortoise.transactions import in_transaction

from faregate import jsonutil
from faregate.db import models as m
from faregate.management.common import fail, gateway, json_body, ok, page_data, paging, require
from faregate.state.snapshot import split_list

blueprint = Blueprint("channels", __name__)

TEXT_FIELDS = ("name", "base_url", "other", "models", "group", "model_mapping", "status_code_mapping", "setting",
               "param_override", "header_override", "remark", "tag", "test_model", "openai_organization")
INT_FIELDS = ("type", "status", "weight", "priority", "auto_ban")
JSON_FIELDS = ("model_mapping", "status_code_mapping", "setting", "param_override", "header_override")


def channel_view(row: m.Channel) -> dict[str, Any]:
    return {
        "id": row.id, "type": row.type, "key": "", "name": row.name, "status": row.status, "weight": row.weight,
        "priority": row.priority, "base_url": row.base_url, "models": row.models, "group": row.group,
        "model_mapping": row.model_mapping, "status_code_mapping": row.status_code_mapping,
        "auto_ban": row.auto_ban, "tag": row.tag, "setting": row.setting, "param_override": row.param_override,
        "header_override": row.header_override, "other": row.other, "test_model": row.test_model,
        "openai_organization": row.openai_organization, "created_time": row.created_time,
        "test_time": row.test_time, "response_time": row.response_time, "balance": row.balance,
        "balance_updated_time": row.balance_updated_time, "used_quota": row.used_quota, "remark": row.remark,
    }


def _validate(fields: dict[str, Any]) -> str | None:
    for name in JSON_FIELDS:
        value = fields.get(name)
        if value in (None, ""):
            continue
        if isinstance(value, dict):
            fields[name] = jsonutil.dumps_str(value)
            continue
        if not isinstance(value, str):
            return f"{name} must be a JSON object"
        try:
            parsed = jsonutil.loads(value)
        except jsonutil.JSONDecodeError:
            return f"{name} is not valid JSON"
        if not isinstance(parsed, dict):
            return f"{name} must be a JSON object"
    for name in INT_FIELDS:
        if name in fields:
            try:
                fields[name] = int(fields[name])
            except (TypeError, ValueError):
                return f"{name} must be an integer"
    for name in TEXT_FIELDS:
        if name in fields and fields[name] is not None and not isinstance(fields[name], str):
            if name in ("models", "group") and isinstance(fields[name], list):
                fields[name] = ",".join(str(v) for v in fields[name])
            else:
                return f"{name} must be a string"
    return None


def _pick(body: dict[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in (*TEXT_FIELDS, *INT_FIELDS) if k in body}


async def rebuild_abilities(row: m.Channel, conn: Any) -> None:
    """The routing index rows of one channel: one per (group × model)."""
    await m.Ability.filter(channel_id=row.id).using_db(conn).delete()
    rows = [
        m.Ability(group=group, model=model, channel_id=row.id, enabled=row.status == m.CHANNEL_ENABLED,
                  priority=row.priority, weight=row.weight, tag=row.tag)
        for group in dict.fromkeys(split_list(row.group) or ["default"])
        for model in dict.fromkeys(split_list(row.models))
    ]
    if rows:
        await m.Ability.bulk_create(rows, using_db=conn)


@blueprint.get("/api/channel/")
@require(m.ROLE_ADMIN)
async def list_channels(me) -> Response:
    page, size = paging()
    query = m.Channel.all()
    status = request.args.get("status")
    if status in ("enabled", "1"):
        query = query.filter(status=m.CHANNEL_ENABLED)
    elif status in ("disabled", "0"):
        query = query.exclude(status=m.CHANNEL_ENABLED)
    if request.args.get("type"):
        try:
            query = query.filter(type=int(request.args["type"]))
        except ValueError:
            return fail("type must be an integer")
    total = await query.count()
    order = "id" if request.args.get("id_sort") in ("true", "1") else "-priority"
    rows = await query.order_by(order, "-id").offset((page - 1) * size).limit(size)
    type_counts: dict[str, int] = {}
    for channel_type in await m.Channel.all().values_list("type", flat=True):
        type_counts[str(channel_type)] = type_counts.get(str(channel_type), 0) + 1
    return ok(page_data([channel_view(r) for r in rows], total, page, size, type_counts=type_counts))


@blueprint.get("/api/channel/<int:channel_id>")
@require(m.ROLE_ADMIN)
async def get_channel(channel_id: int, me) -> Response:
    row = await m.Channel.get_or_none(id=channel_id)
    if row is None:
        return fail("channel not found")
    return ok(channel_view(row))


@blueprint.post("/api/channel/")
@require(m.ROLE_ADMIN)
async def add_channel(me) -> Response:
    body = await json_body()
    if body is None:
        return fail("invalid JSON body")
    mode = body.get("mode", "single")
    data = body.get("channel", body)
    if not isinstance(data, dict):
        return fail("channel must be an object")
    fields = _pick(data)
    error = _validate(fields)
    if error:
        return fail(error)
    key = data.get("key")
    if not isinstance(key, str) or not key.strip():
        return fail("the channel key must not be empty")
    if mode == "batch":
        keys = [k.strip() for k in key.split("\n") if k.strip()]
    elif mode in ("single", "multi_to_single"):
        keys = [key.strip()]
    else:
        return fail(f"unknown mode {mode}")
    gw = gateway()
    created = []
    async with in_transaction() as conn:
        for k in keys:
            row = await m.Channel.create(**fields, created_time=int(time.time()), using_db=conn)
            row.key_enc = gw.box.encrypt(k, f"channel:{row.id}")
            await row.save(using_db=conn, update_fields=["key_enc"])
            await rebuild_abilities(row, conn)
            created.append(row)
    for row in created:
        await gw.feed.publish("channel", row.id)
    return ok([r.id for r in created] if mode == "batch" else created[0].id)


@blueprint.put("/api/channel/")
@require(m.ROLE_ADMIN)
async def update_channel(me) -> Response:
    body = await json_body()
    if body is None:
        return fail("invalid JSON body")
    try:
        channel_id = int(body.get("id"))
    except (TypeError, ValueError):
        return fail("id is required")
    fields = _pick(body)
    error = _validate(fields)
    if error:
        return fail(error)
    gw = gateway()
    async with in_transaction() as conn:
        row = await m.Channel.get_or_none(id=channel_id).using_db(conn)
        if row is None:
            return fail("channel not found")
        for name, value in fields.items():
            setattr(row, name, value)
        key = body.get("key")
        if isinstance(key, str) and key.strip():  # an empty key keeps the stored one
            row.key_enc = gw.box.encrypt(key.strip(), f"channel:{row.id}")
        await row.save(using_db=conn)
        await rebuild_abilities(row, conn)
    await gw.feed.publish("channel", channel_id)
    return ok(channel_view(row))


@blueprint.delete("/api/channel/<int:channel_id>")
@require(m.ROLE_ADMIN)
async def delete_channel(channel_id: int, me) -> Response:
    gw = gateway()
    async with in_transaction() as conn:
        deleted = await m.Channel.filter(id=channel_id).using_db(conn).delete()
        await m.Ability.filter(channel_id=channel_id).using_db(conn).delete()
    if not deleted:
        return fail("channel not found")
    await gw.feed.publish("channel", channel_id)
    return ok()
