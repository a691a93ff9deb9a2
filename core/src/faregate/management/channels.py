"""Channels (admin): list, get, add, update, delete, and the channel types the installed
provider plugins serve (the add form's choice). The key is encrypted at rest
and never appears in a list or get view. A channel added in ``multi_to_single`` mode
holds many keys (see :mod:`faregate.management.channel_keys`); updating it appends to
or replaces them (``key_mode``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pydantic import Field
from quart import Blueprint, Response, request
from quart_schema import document_response, validate_request
from tortoise.functions import Count
from tortoise.transactions import in_transaction

from faregate import jsonutil
from faregate.db import models as m
from faregate.management.channel_bodies import (
    GROUP_NAME_MAX,
    MODEL_NAME_MAX,
    ChannelAdd,
    ChannelPage,
    ChannelUpdate,
    ChannelView,
    channel_fields,
)
from faregate.management.channel_rules import check_channel, check_keys, key_settings
from faregate.management.common import (
    INT32_MAX,
    BadInput,
    fail,
    gateway,
    ok,
    page_data,
    page_rows,
    parse_id,
    require,
)
from faregate.management.openapi import Done, Ok, Shape
from faregate.net.proxy import MASK, mask_setting, unmask_setting
from faregate.principals import Principal
from faregate.state.multi_keys import (
    Key,
    dump_info,
    is_multi_key,
    load_keys,
    new_info,
    public_info,
    read_info,
    split_keys,
)
from faregate.state.snapshot import key_lines, split_list

if TYPE_CHECKING:
    from tortoise.backends.base.client import BaseDBAsyncClient
    from tortoise.queryset import QuerySet

blueprint = Blueprint("channels", __name__)
# the bulk routes take these from here
__all__ = ["GROUP_NAME_MAX", "MODEL_NAME_MAX", "blueprint", "channel_fields", "channel_view", "rebuild_abilities"]


def channel_view(row: m.Channel) -> dict[str, Any]:
    """new-api omits the key column; it is shown as ``""``."""
    return {
        "id": row.id, "type": row.type, "key": "", "name": row.name, "status": row.status, "weight": row.weight,
        "priority": row.priority, "base_url": row.base_url, "models": row.models, "group": row.group,
        "model_mapping": row.model_mapping, "status_code_mapping": row.status_code_mapping,
        "auto_ban": row.auto_ban, "tag": row.tag, "setting": mask_setting(row.setting),
        "settings": mask_setting(other_settings(row)), "param_override": row.param_override,
        "header_override": row.header_override, "other": row.other, "test_model": row.test_model,
        "openai_organization": row.openai_organization, "created_time": row.created_time,
        "test_time": row.test_time, "response_time": row.response_time, "balance": row.balance,
        "balance_updated_time": row.balance_updated_time, "used_quota": row.used_quota, "remark": row.remark,
        "channel_info": public_info(row.channel_info),
    }


#: new-api's "other settings" keys, which an earlier version merged into ``setting`` on save
OTHER_SETTINGS = frozenset({"azure_responses_version", "vertex_key_type", "aws_key_type", "openrouter_enterprise",
                            "claude_beta_query", "allow_service_tier", "allow_inference_geo", "allow_safety_identifier",
                            "disable_store", "allow_include_obfuscation"})


def other_settings(row: m.Channel) -> str:
    """The channel's ``settings`` as its console reads them: the column, or for a channel saved
    while they were merged into ``setting``, the keys found there (the next save stores them apart)."""
    if row.settings or not row.setting:
        return row.settings
    try:
        setting = jsonutil.loads(row.setting)
    except jsonutil.JSONDecodeError:
        return ""
    found = {k: v for k, v in setting.items() if k in OTHER_SETTINGS} if isinstance(setting, dict) else {}
    return jsonutil.dumps_str(found) if found else ""


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
@document_response(Ok[ChannelPage])
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


class ChannelTypeView(Shape):
    """One channel type an installed provider plugin serves."""

    type: int = Field(description="new-api's channel type number")
    name: str = Field(description="the type's name: the provider's, or its vendor's for a provider of several")
    provider: str = Field(description="the name of the provider plugin serving it")
    default_base_url: str = Field(description="where a channel without a base URL goes (\"\": each gives one)")
    endpoints: list[str] = Field(description="the endpoint kinds its channels serve (chat, embeddings …)")


@blueprint.get("/api/channel/types")
@require(m.ROLE_ADMIN)
@document_response(Ok[list[ChannelTypeView]])
async def channel_types(me: Principal) -> Response:
    """``[{type, name, provider, default_base_url, endpoints}]`` by type number: the types
    a channel may have here. new-api's list lives in its UI; here a type exists only when
    an installed plugin serves it."""
    return ok([{"type": kind, "name": provider.channel_type_name(kind), "provider": provider.name,
                "default_base_url": provider.channel_type_base_url(kind),
                "endpoints": sorted(e for e in provider.endpoints if provider.serves(e, kind))}
               for kind, provider in sorted(gateway().providers.items())])


@blueprint.get("/api/channel/<channel_id>")
@require(m.ROLE_ADMIN)
@document_response(Ok[ChannelView])
async def get_channel(channel_id: str, me: Principal) -> Response:
    row = await m.Channel.get_or_none(id=parse_id(channel_id))
    if row is None:
        return fail("channel not found")
    return ok(channel_view(row))


def _keys(key: str | None, mode: str) -> list[str]:
    if not key or not key.strip():
        raise BadInput("the channel key must not be empty")
    if mode == "batch":  # one channel per key
        return split_keys(key)
    if mode == "multi_to_single" or key.lstrip().startswith(("{", "[")):
        # one channel holding every key (newline-separated); a JSON key (a service account's
        # file, pasted over many lines) is stored as one line of compact JSON per object
        return ["\n".join(split_keys(key))]
    return [key.strip()]


@blueprint.post("/api/channel/")
@require(m.ROLE_ADMIN)
@validate_request(ChannelAdd)
@document_response(Ok[int | list[int]])
async def add_channel(data: ChannelAdd, me: Principal) -> Response:
    """``{mode: single|batch|multi_to_single, multi_key_mode: random|polling, channel: {...}}``.
    Returns the new id (a list of ids in batch mode); new-api returns no data."""
    mode = data.mode or "single"
    rotation = data.multi_key_mode or "random"
    channel = data.new_channel()
    fields = channel.columns()
    gw = gateway()
    await check_channel(fields, gw.providers, creating=True, addresses=gw.channel_addresses)
    keys = _keys(channel.key, mode)
    check_keys(gw.providers.get(int(fields.get("type", 0))), [k for text in keys for k in key_lines(text)],
               fields.get("other") or "", key_settings(fields.get("setting"), fields.get("settings")))
    name_prefix = mode == "batch" and len(keys) > 1 and data.batch_add_set_key_prefix_2_name is True
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
    await gw.feed.publish_many("channel", [row.id for row in created])
    return ok([r.id for r in created] if mode == "batch" else created[0].id)


def _multi_key_update(row: m.Channel, key: str, data: ChannelUpdate, stored: str) -> str | None:
    """A multi-key channel's new key text (None: unchanged) and ``channel_info``:
    ``key_mode`` ``append`` adds the new keys (enabled, repeats dropped) after the stored
    ones and keeps their states; ``replace`` (the default) puts new keys in their place,
    every key enabled. ``multi_key_mode`` changes the rotation."""
    info = read_info(row.channel_info)
    if data.multi_key_mode:
        info["multi_key_mode"] = data.multi_key_mode
    keys = load_keys(stored, info)
    text = None
    if key.strip():
        fresh = split_keys(key)
        if data.key_mode == "append":
            known = {k.text for k in keys}
            keys += [Key(k) for k in fresh if k not in known]
        else:
            keys = [Key(k) for k in fresh]
        text = "\n".join(k.text for k in keys)
    row.channel_info = jsonutil.dumps_str(dump_info(info, keys))
    return text


@blueprint.put("/api/channel/")
@require(m.ROLE_ADMIN)
@validate_request(ChannelUpdate)
@document_response(Ok[ChannelView])
async def update_channel(data: ChannelUpdate, me: Principal) -> Response:
    """Partial update: absent fields keep their value; an empty key keeps the stored one.
    A multi-key channel takes ``key_mode`` (append|replace) and ``multi_key_mode``."""
    fields = data.columns()
    gw = gateway()
    for column in ("setting", "settings"):
        if MASK in (fields.get(column) or ""):  # the listed text sent back: its masked proxy is the stored one
            before = await m.Channel.get_or_none(id=data.id)
            fields[column] = unmask_setting(fields[column], getattr(before, column) if before else "")
    await check_channel(fields, gw.providers, creating=False, addresses=gw.channel_addresses)
    key = data.key or ""
    async with in_transaction() as conn:
        row = await m.Channel.get_or_none(id=data.id, using_db=conn)
        if row is None:
            return fail("channel not found")
        for name, value in fields.items():
            setattr(row, name, value)
        if {"setting", "settings"} & fields.keys():  # the object the providers read, as it will be
            await check_channel({"setting": row.setting, "settings": row.settings}, gw.providers, creating=False,
                                addresses=gw.channel_addresses)
        new_key = key.strip() or None
        if new_key and new_key.startswith(("{", "[")):  # a service-account JSON: one line per object
            new_key = "\n".join(split_keys(new_key))
        if is_multi_key(read_info(row.channel_info)):
            stored = gw.box.decrypt(row.key_enc, f"channel:{row.id}") if row.key_enc else ""
            new_key = _multi_key_update(row, key, data, stored)
        if new_key or {"type", "other", "setting", "settings"} & fields.keys():
            # the key as it will be stored, read with the channel's type, other and settings as they will be
            text = new_key or (gw.box.decrypt(row.key_enc, f"channel:{row.id}") if row.key_enc else "")
            check_keys(gw.providers.get(row.type), key_lines(text), row.other or "",
                       key_settings(row.setting, other_settings(row)))
        if new_key:
            row.key_enc = gw.box.encrypt(new_key, f"channel:{row.id}")
        await row.save(using_db=conn)
        await rebuild_abilities(row, conn)
    await gw.feed.publish("channel", data.id)
    return ok(channel_view(row))


@blueprint.delete("/api/channel/<channel_id>")
@require(m.ROLE_ADMIN)
@document_response(Done)
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
