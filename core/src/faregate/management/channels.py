"""Channels (admin): list, get, add, update, delete. The key is encrypted at rest
and never appears in a list or get view. A channel added in ``multi_to_single`` mode
holds many keys (see :mod:`faregate.management.channel_keys`); updating it appends to
or replaces them (``key_mode``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from quart import Blueprint, Response, request
from tortoise.functions import Count
from tortoise.transactions import in_transaction

from faregate import jsonutil
from faregate.db import models as m
from faregate.management.channel_keys import (
    Key,
    dump_info,
    is_multi_key,
    key_mode,
    load_keys,
    new_info,
    public_info,
    read_info,
    split_keys,
)
from faregate.management.channel_rules import check_channel
from faregate.management.common import (
    INT32_MAX,
    BadInput,
    fail,
    gateway,
    get_int,
    get_str,
    ok,
    page_data,
    page_rows,
    parse_id,
    require,
    require_body,
)
from faregate.principals import Principal
from faregate.state.snapshot import split_list

if TYPE_CHECKING:
    from tortoise.backends.base.client import BaseDBAsyncClient
    from tortoise.queryset import QuerySet

blueprint = Blueprint("channels", __name__)

# text fields and their column limits (None = TEXT); the limits matter on MySQL/PostgreSQL
TEXT_FIELDS: dict[str, int | None] = {
    "name": 128, "base_url": 512, "other": None, "models": None, "group": 255, "model_mapping": None,
    "status_code_mapping": None, "setting": None, "param_override": None, "header_override": None,
    "remark": 255, "tag": 128, "test_model": 255, "openai_organization": 128,
}
NULLABLE_FIELDS = ("tag", "test_model", "openai_organization")
JSON_FIELDS = ("model_mapping", "status_code_mapping", "setting", "param_override", "header_override")
MODES = ("single", "batch", "multi_to_single")
MODEL_NAME_MAX = 255  # abilities.model
GROUP_NAME_MAX = 64  # abilities.group


def channel_view(row: m.Channel) -> dict[str, Any]:
    """new-api omits the key column; it is shown as ``""``."""
    return {
        "id": row.id, "type": row.type, "key": "", "name": row.name, "status": row.status, "weight": row.weight,
        "priority": row.priority, "base_url": row.base_url, "models": row.models, "group": row.group,
        "model_mapping": row.model_mapping, "status_code_mapping": row.status_code_mapping,
        "auto_ban": row.auto_ban, "tag": row.tag, "setting": row.setting, "param_override": row.param_override,
        "header_override": row.header_override, "other": row.other, "test_model": row.test_model,
        "openai_organization": row.openai_organization, "created_time": row.created_time,
        "test_time": row.test_time, "response_time": row.response_time, "balance": row.balance,
        "balance_updated_time": row.balance_updated_time, "used_quota": row.used_quota, "remark": row.remark,
        "channel_info": public_info(row.channel_info),
    }


def channel_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The writable columns present in ``data``, type-checked as Go's JSON binding
    would (a string where an integer belongs fails, and so on)."""
    fields: dict[str, Any] = {}
    data = dict(data)
    for name in ("models", "group"):  # the UI sends strings; lists are a convenience
        value = data.get(name)
        if isinstance(value, list):
            if not all(isinstance(v, str) for v in value):
                raise BadInput(f"{name} must be a comma-separated string")
            data[name] = ",".join(v.strip() for v in value)
    for name in JSON_FIELDS:  # accept an object as well as its JSON text
        if isinstance(data.get(name), dict):
            data[name] = jsonutil.dumps_str(data[name])
    if isinstance(data.get("auto_ban"), bool):
        data["auto_ban"] = int(data["auto_ban"])
    for name, max_len in TEXT_FIELDS.items():
        value = get_str(data, name, max_len=max_len)
        if value is None:
            continue
        fields[name] = None if value == "" and name in NULLABLE_FIELDS else value
    for name in JSON_FIELDS:
        if fields.get(name):
            try:
                parsed = jsonutil.loads(fields[name])
            except jsonutil.JSONDecodeError:
                raise BadInput(f"{name} is not valid JSON") from None
            if not isinstance(parsed, dict):
                raise BadInput(f"{name} must be a JSON object")
    for name, lo, hi in (("type", 0, INT32_MAX), ("status", 0, 3), ("weight", 0, INT32_MAX),
                         ("priority", -(2**63), 2**63 - 1), ("auto_ban", 0, 1)):
        value = get_int(data, name, lo=lo, hi=hi)
        if value is not None:
            fields[name] = value
    for model in split_list(fields.get("models")):
        if len(model) > MODEL_NAME_MAX:
            raise BadInput(f"model name too long: {model[:40]}…")
    for group in split_list(fields.get("group")):
        if len(group) > GROUP_NAME_MAX:
            raise BadInput(f"group name too long: {group[:40]}…")
    return fields


async def rebuild_abilities(row: m.Channel, conn: BaseDBAsyncClient) -> None:
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


def _status_filter(query: QuerySet[m.Channel]) -> QuerySet[m.Channel]:
    status = request.args.get("status", "")
    if status in ("enabled", "1"):
        return query.filter(status=m.CHANNEL_ENABLED)
    if status in ("disabled", "0"):
        return query.exclude(status=m.CHANNEL_ENABLED)
    return query


@blueprint.get("/api/channel/")
@require(m.ROLE_ADMIN)
async def list_channels(me: Principal) -> Response:
    """``?p&page_size&status&type&id_sort`` → ``{page, page_size, total, items,
    type_counts}``; ``type_counts`` follows the status filter but not the type filter,
    as new-api's (the UI's type tabs)."""
    query = _status_filter(m.Channel.all())
    type_arg = request.args.get("type", "").strip()
    if type_arg:
        try:
            channel_type = int(type_arg)
        except ValueError:
            return fail("type must be an integer")
        if not 0 <= channel_type <= INT32_MAX:
            return fail("type must be an integer")
        query = query.filter(type=channel_type)
    order = "-id" if request.args.get("id_sort") in ("true", "1") else "-priority"
    rows, total, page, size = await page_rows(query, order, "-id")
    counts = await (_status_filter(m.Channel.all()).annotate(n=Count("id")).group_by("type")
                    .values("type", "n"))
    type_counts = {str(c["type"]): c["n"] for c in counts}
    return ok(page_data([channel_view(r) for r in rows], total, page, size, type_counts=type_counts))


@blueprint.get("/api/channel/<channel_id>")
@require(m.ROLE_ADMIN)
async def get_channel(channel_id: str, me: Principal) -> Response:
    row = await m.Channel.get_or_none(id=parse_id(channel_id))
    if row is None:
        return fail("channel not found")
    return ok(channel_view(row))


def _keys(key: Any, mode: str) -> list[str]:
    if not isinstance(key, str) or not key.strip():
        raise BadInput("the channel key must not be empty")
    if "\x00" in key:
        raise BadInput("the channel key must not contain NUL characters")
    if mode == "batch":  # one channel per key
        return split_keys(key)
    if mode == "multi_to_single":  # one channel holding every key (newline-separated)
        return ["\n".join(split_keys(key))]
    return [key.strip()]


@blueprint.post("/api/channel/")
@require(m.ROLE_ADMIN)
async def add_channel(me: Principal) -> Response:
    """``{mode: single|batch|multi_to_single, multi_key_mode: random|polling, channel: {...}}``.
    Returns the new id (a list of ids in batch mode); new-api returns no data."""
    body = await require_body()
    mode = body.get("mode") or "single"
    if mode not in MODES:
        return fail("mode must be single, batch or multi_to_single")
    rotation = key_mode(body.get("multi_key_mode")) or "random"
    data = body.get("channel", body)
    if not isinstance(data, dict):
        return fail("channel must be an object")
    fields = channel_fields(data)
    gw = gateway()
    await check_channel(fields, gw.providers.keys(), creating=True, settings=gw.settings)
    keys = _keys(data.get("key"), mode)
    name_prefix = mode == "batch" and len(keys) > 1 and body.get("batch_add_set_key_prefix_2_name") is True
    created = []
    now = int(time.time())
    async with in_transaction() as conn:
        for key in keys:
            extra: dict[str, Any] = {"name": f"{fields.get('name') or ''} {key[:8]}".strip()} if name_prefix else {}
            if mode == "multi_to_single":
                extra["channel_info"] = jsonutil.dumps_str(new_info(key.count("\n") + 1, rotation))
            row = await m.Channel.create(**{**fields, **extra}, created_time=now, using_db=conn)
            row.key_enc = gw.box.encrypt(key, f"channel:{row.id}")
            await row.save(using_db=conn, update_fields=["key_enc"])
            await rebuild_abilities(row, conn)
            created.append(row)
    for row in created:
        await gw.feed.publish("channel", row.id)
    return ok([r.id for r in created] if mode == "batch" else created[0].id)


def _multi_key_update(row: m.Channel, key: str, body: dict[str, Any], stored: str) -> str | None:
    """A multi-key channel's new key text (None: unchanged) and ``channel_info``:
    ``key_mode`` ``append`` adds the new keys (enabled, repeats dropped) after the stored
    ones and keeps their states; ``replace`` (the default) puts new keys in their place,
    every key enabled. ``multi_key_mode`` changes the rotation."""
    append = body.get("key_mode") == "append"
    if body.get("key_mode") not in (None, "", "append", "replace"):
        raise BadInput("key_mode must be append or replace", status=400)
    info = read_info(row.channel_info)
    rotation = key_mode(body.get("multi_key_mode"))
    if rotation is not None:
        info["multi_key_mode"] = rotation
    keys = load_keys(stored, info)
    text = None
    if key.strip():
        fresh = split_keys(key)
        if append:
            known = {k.text for k in keys}
            keys += [Key(k) for k in fresh if k not in known]
        else:
            keys = [Key(k) for k in fresh]
        text = "\n".join(k.text for k in keys)
    row.channel_info = jsonutil.dumps_str(dump_info(info, keys))
    return text


@blueprint.put("/api/channel/")
@require(m.ROLE_ADMIN)
async def update_channel(me: Principal) -> Response:
    """Partial update: absent fields keep their value; an empty key keeps the stored one.
    A multi-key channel takes ``key_mode`` (append|replace) and ``multi_key_mode``."""
    body = await require_body()
    channel_id = parse_id(body.get("id"), text=False)
    fields = channel_fields(body)
    await check_channel(fields, gateway().providers.keys(), creating=False, settings=gateway().settings)
    key = body.get("key")
    if key is not None and not isinstance(key, str):
        return fail("key must be a string")
    if key and "\x00" in key:
        return fail("key must not contain NUL characters")
    gw = gateway()
    async with in_transaction() as conn:
        row = await m.Channel.get_or_none(id=channel_id, using_db=conn)
        if row is None:
            return fail("channel not found")
        for name, value in fields.items():
            setattr(row, name, value)
        new_key = key.strip() if key and key.strip() else None
        if is_multi_key(read_info(row.channel_info)):
            stored = gw.box.decrypt(row.key_enc, f"channel:{row.id}") if row.key_enc else ""
            new_key = _multi_key_update(row, key or "", body, stored)
        if new_key:
            row.key_enc = gw.box.encrypt(new_key, f"channel:{row.id}")
        await row.save(using_db=conn)
        await rebuild_abilities(row, conn)
    await gw.feed.publish("channel", channel_id)
    return ok(channel_view(row))


@blueprint.delete("/api/channel/<channel_id>")
@require(m.ROLE_ADMIN)
async def delete_channel(channel_id: str, me: Principal) -> Response:
    ref = parse_id(channel_id)
    gw = gateway()
    async with in_transaction() as conn:
        deleted = await m.Channel.filter(id=ref).using_db(conn).delete()
        await m.Ability.filter(channel_id=ref).using_db(conn).delete()
    if not deleted:
        return fail("channel not found")
    await gw.feed.publish("channel", ref)
    return ok()
