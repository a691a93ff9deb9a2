"""Channel operations on many at once (new-api's admin routes): search, enabled models,
delete disabled, batch delete, batch tag, tag enable / disable / edit / models, copy, and
rebuilding the routing index (``fix``). Every change is published to the other workers."""

from __future__ import annotations

import time
from typing import Annotated

from pydantic import Field, StringConstraints
from quart import Blueprint, Response, request
from quart_schema import document_response, validate_request
from tortoise.transactions import in_transaction

from faregate.db import models as m
from faregate.management.channel_rules import check_channel, check_type
from faregate.management.channels import (
    GROUP_NAME_MAX,
    MODEL_NAME_MAX,
    channel_fields,
    channel_view,
    rebuild_abilities,
)
from faregate.management.common import (
    INT32_MAX,
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
from faregate.management.openapi import INT64, Body, IdList, Ok
from faregate.principals import Principal
from faregate.state.snapshot import split_list

blueprint = Blueprint("channel_bulk", __name__)

KEYWORD_MAX = 128
TAG_MAX = 128


async def _publish(ids: list[int]) -> None:
    await gateway().feed.publish_many("channel", ids)


async def _delete(ids: list[int]) -> int:
    async with in_transaction() as conn:
        deleted = await m.Channel.filter(id__in=ids).using_db(conn).delete()
        await m.Ability.filter(channel_id__in=ids).using_db(conn).delete()
    await _publish(ids)
    return int(deleted)


@blueprint.get("/api/channel/search")
@require(m.ROLE_ADMIN)
async def search_channels(me: Principal) -> Response:
    """``?keyword`` (name or base URL contains it, or an exact id), ``group``, ``model``."""
    keyword = query_text("keyword", KEYWORD_MAX)
    group = query_text("group", GROUP_NAME_MAX)
    model = query_text("model", MODEL_NAME_MAX)
    query = m.Channel.all()
    if keyword:
        query = query.filter(keyword_match(keyword, "name", "base_url", "tag"))
    if group or model:  # the routing index knows which channel serves what, exactly
        abilities = m.Ability.all()
        if group:
            abilities = abilities.filter(group=group)
        if model:
            abilities = abilities.filter(model=model)
        ids = {a.channel_id for a in await abilities.only("channel_id")}
        query = query.filter(id__in=list(ids))
    rows, total, page, size = await page_rows(query, "-priority", "-id")
    return ok(page_data([channel_view(r) for r in rows], total, page, size))


@blueprint.get("/api/channel/models_enabled")
@require(m.ROLE_ADMIN)
async def enabled_models(me: Principal) -> Response:
    return ok(sorted({a.model for a in await m.Ability.filter(enabled=True).only("model")}))


@blueprint.delete("/api/channel/disabled")
@require(m.ROLE_ADMIN)
async def delete_disabled(me: Principal) -> Response:
    ids = [c.id for c in await m.Channel.exclude(status=m.CHANNEL_ENABLED).only("id")]
    return ok(await _delete(ids) if ids else 0)


@blueprint.post("/api/channel/batch")
@require(m.ROLE_ADMIN)
@validate_request(IdList)
async def batch_delete(data: IdList, me: Principal) -> Response:
    return ok(await _delete(data.ids))


class BatchTag(IdList):
    """``{ids, tag}``; an empty or absent tag clears it."""

    tag: Annotated[str, StringConstraints(strip_whitespace=True, max_length=TAG_MAX)] | None = None


@blueprint.post("/api/channel/batch/tag")
@require(m.ROLE_ADMIN)
@validate_request(BatchTag)
async def batch_tag(data: BatchTag, me: Principal) -> Response:
    ids, tag = data.ids, data.tag
    async with in_transaction() as conn:
        changed = await m.Channel.filter(id__in=ids).using_db(conn).update(tag=tag or None)
        await m.Ability.filter(channel_id__in=ids).using_db(conn).update(tag=tag or None)
    await _publish(ids)
    return ok(changed)


class Tag(Body):
    tag: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=TAG_MAX)]


async def _tag_status(tag: str, status: int) -> Response:
    ids = [c.id for c in await m.Channel.filter(tag=tag).only("id")]
    async with in_transaction() as conn:
        await m.Channel.filter(id__in=ids).using_db(conn).update(status=status)
        await m.Ability.filter(channel_id__in=ids).using_db(conn).update(enabled=status == m.CHANNEL_ENABLED)
    await _publish(ids)
    return ok(len(ids))


@blueprint.post("/api/channel/tag/disabled")
@require(m.ROLE_ADMIN)
@validate_request(Tag)
@document_response(Ok[int])
async def tag_disable(data: Tag, me: Principal) -> Response:
    """``{tag}`` → how many channels it disabled."""
    return await _tag_status(data.tag, m.CHANNEL_MANUALLY_DISABLED)


@blueprint.post("/api/channel/tag/enabled")
@require(m.ROLE_ADMIN)
@validate_request(Tag)
@document_response(Ok[int])
async def tag_enable(data: Tag, me: Principal) -> Response:
    """``{tag}`` → how many channels it enabled."""
    return await _tag_status(data.tag, m.CHANNEL_ENABLED)


class TagEdit(Tag):
    """new-api's tag edit: absent (null) fields, and empty ``model_mapping`` / ``models`` /
    ``groups``, keep each channel's value; an empty ``param_override`` / ``header_override``
    clears it; ``new_tag`` renames the tag (empty: removes it)."""

    new_tag: Annotated[str, StringConstraints(strip_whitespace=True, max_length=TAG_MAX)] | None = None
    priority: INT64 | None = None
    weight: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    model_mapping: str | None = None
    models: str | None = None
    groups: str | None = None
    param_override: str | None = None
    header_override: str | None = None


@blueprint.put("/api/channel/tag")
@require(m.ROLE_ADMIN)
@validate_request(TagEdit)
@document_response(Ok[int])
async def tag_edit(data: TagEdit, me: Principal) -> Response:
    """Every channel with ``tag`` at once, checked as a single channel's update; their
    routing index is rebuilt. Answers how many channels changed."""
    given = {"model_mapping": data.model_mapping or None, "models": data.models or None,
             "group": data.groups or None, "priority": data.priority, "weight": data.weight,
             "param_override": None if data.param_override is None else data.param_override.strip(),
             "header_override": None if data.header_override is None else data.header_override.strip()}
    fields = channel_fields({name: value for name, value in given.items() if value is not None})
    gw = gateway()
    await check_channel(fields, gw.providers, creating=False, addresses=gw.channel_addresses)
    if data.new_tag is not None and data.new_tag != data.tag:
        fields["tag"] = data.new_tag or None
    if not fields:
        return fail("nothing to change: give new_tag, priority, weight, model_mapping, models, groups, "
                    "param_override or header_override", status=400)
    rows = await m.Channel.filter(tag=data.tag)
    async with in_transaction() as conn:
        for row in rows:
            for name, value in fields.items():
                setattr(row, name, value)
            await row.save(using_db=conn, update_fields=list(fields))
            await rebuild_abilities(row, conn)
    await _publish([r.id for r in rows])
    return ok(len(rows))


@blueprint.get("/api/channel/tag/models")
@require(m.ROLE_ADMIN)
async def tag_models(me: Principal) -> Response:
    """The models of the tag's channels (new-api: those of the channel listing the most)."""
    tag = request.args.get("tag", "").strip()
    if not tag or len(tag) > TAG_MAX:
        return fail("tag is required", status=400)
    lists: list[list[str]] = [split_list(c.models) for c in await m.Channel.filter(tag=tag).only("id", "models")]
    longest = max(lists, key=lambda models: len(models), default=[])
    return ok(",".join(longest))


@blueprint.post("/api/channel/copy/<channel_id>")
@require(m.ROLE_ADMIN)
async def copy_channel(channel_id: str, me: Principal) -> Response:
    """``?suffix=`` (default ``_copy``) ``&reset_balance=`` (default true): a new channel
    with the same settings and key."""
    row = await m.Channel.get_or_none(id=parse_id(channel_id))
    if row is None:
        return fail("channel not found")
    suffix = request.args.get("suffix", "_copy")[:32]
    reset = request.args.get("reset_balance", "true").lower() != "false"
    fields = {f: getattr(row, f) for f in row._meta.db_fields if f not in ("id", "key_enc")}
    fields["name"] = (row.name + suffix)[:128]
    fields["created_time"] = int(time.time())
    if reset:
        fields.update(balance=0, used_quota=0, balance_updated_time=0)
    gw = gateway()
    check_type(row.type, gw.providers)  # a new channel, as any: of a type some plugin serves
    async with in_transaction() as conn:
        copy = await m.Channel.create(**fields, using_db=conn)
        # the key is encrypted bound to its channel id: re-encrypt for the copy
        copy.key_enc = gw.box.encrypt(gw.box.decrypt(row.key_enc, f"channel:{row.id}"), f"channel:{copy.id}")
        await copy.save(using_db=conn, update_fields=["key_enc"])
        await rebuild_abilities(copy, conn)
    await _publish([copy.id])
    return ok({"id": copy.id})


@blueprint.post("/api/channel/fix")
@require(m.ROLE_ADMIN)
async def fix_abilities(me: Principal) -> Response:
    """Rebuild the routing index from the channels; ``{success, fails}`` counts."""
    done = fails = 0
    for row in await m.Channel.all():
        try:
            async with in_transaction() as conn:
                await rebuild_abilities(row, conn)
            done += 1
        except Exception:  # noqa: BLE001 - one bad channel must not stop the others
            fails += 1
    await _publish([c.id for c in await m.Channel.all().only("id")])
    return ok({"success": done, "fails": fails})
