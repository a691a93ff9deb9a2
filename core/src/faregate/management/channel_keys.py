"""The keys of a channel (admin). A multi-key channel (added in ``multi_to_single`` mode)
holds its keys newline-separated in the one encrypted key column and their state in
``channel_info`` as new-api's (``is_multi_key``, ``multi_key_size``,
``multi_key_status_list`` {index: status}, ``multi_key_disabled_reason`` / ``_time``,
``multi_key_mode`` random|polling). ``POST /api/channel/multi_key/manage`` lists, disables,
enables and deletes keys; answers show a masked preview of a key, never the key. Every
change is one conditional UPDATE on the key and state as they were read (a concurrent
change is retried, never overwritten) and is published so every worker reloads the
channel: the relay offers only enabled keys (:meth:`ChannelEntry.pick_key`)."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response
from quart_schema import document_response, validate_request

from faregate import jsonutil
from faregate.db import models as m
from faregate.management.common import BadInput, fail, gateway, ok, require
from faregate.management.openapi import NOT_BOOL, Body, RowId, Shape
from faregate.principals import Principal
from faregate.state.multi_keys import Key, dump_info, is_multi_key, key_preview, load_keys, read_info
from faregate.state.snapshot import KEY_AUTO_DISABLED, KEY_ENABLED, KEY_MANUALLY_DISABLED

blueprint = Blueprint("channel_keys", __name__)

Action = Literal["get_key_status", "disable_key", "enable_key", "enable_all_keys", "disable_all_keys", "delete_key",
                 "delete_disabled_keys"]
DEFAULT_KEY_PAGE_SIZE = 50  # new-api's
MAX_KEY_PAGE_SIZE = 1000
WRITE_ATTEMPTS = 3


# -- POST /api/channel/multi_key/manage --------------------------------------------------
class MultiKeyManage(Body):
    """new-api's multi-key manage request."""

    channel_id: RowId
    action: Action
    key_index: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = None
    page: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    page_size: Annotated[int, Field(ge=0, le=MAX_KEY_PAGE_SIZE)] = 0
    status: Annotated[Literal[1, 2, 3], NOT_BOOL] | None = None


class KeyStatusView(Shape):
    index: int
    status: int
    disabled_time: int
    reason: str
    key_preview: str


class KeyStatusPage(Shape):
    keys: list[KeyStatusView]
    total: int
    page: int
    page_size: int
    total_pages: int
    enabled_count: int
    manual_disabled_count: int
    auto_disabled_count: int


class Managed(BaseModel):
    """``get_key_status``: a page of keys; the others: a count, or no data."""

    model_config = ConfigDict(extra="forbid")
    success: Literal[True]
    message: str
    data: KeyStatusPage | int | None = None


def _key_at(keys: list[Key], index: int | None) -> Key:
    if index is None:
        raise BadInput("key_index is required for this action", status=400)
    if index >= len(keys):
        raise BadInput(f"key_index out of range (the channel has {len(keys)} keys)", status=400)
    return keys[index]


def key_status_page(keys: list[Key], req: MultiKeyManage) -> dict[str, Any]:
    size = req.page_size or DEFAULT_KEY_PAGE_SIZE
    listed = [(i, k) for i, k in enumerate(keys) if req.status is None or k.status == req.status]
    pages = max(1, -(-len(listed) // size))
    page = min(max(1, req.page), pages)
    items = [{"index": i, "status": k.status, "disabled_time": k.time, "reason": k.reason,
              "key_preview": key_preview(k.text)} for i, k in listed[(page - 1) * size:page * size]]
    counts = {s: sum(1 for k in keys if k.status == s) for s in (KEY_ENABLED, KEY_MANUALLY_DISABLED,
                                                                  KEY_AUTO_DISABLED)}
    return {"keys": items, "total": len(listed), "page": page, "page_size": size, "total_pages": pages,
            "enabled_count": counts[KEY_ENABLED], "manual_disabled_count": counts[KEY_MANUALLY_DISABLED],
            "auto_disabled_count": counts[KEY_AUTO_DISABLED]}


def apply_action(keys: list[Key], req: MultiKeyManage, now: int) -> tuple[list[Key], str, Any]:
    """``(keys after the action, message, data)``; raises :class:`BadInput` for an action
    that cannot apply."""
    action = req.action
    if action == "disable_key":
        key = _key_at(keys, req.key_index)
        key.status, key.reason, key.time = KEY_MANUALLY_DISABLED, "disabled by an administrator", now
        return keys, "key disabled", None
    if action == "enable_key":
        key = _key_at(keys, req.key_index)
        key.status, key.reason, key.time = KEY_ENABLED, "", 0
        return keys, "key enabled", None
    if action == "enable_all_keys":
        count = sum(1 for k in keys if k.status != KEY_ENABLED)
        return [Key(k.text) for k in keys], f"enabled {count} keys", count
    if action == "disable_all_keys":
        enabled = [k for k in keys if k.status == KEY_ENABLED]
        if not enabled:
            raise BadInput("no enabled key to disable")
        for key in enabled:
            key.status, key.reason, key.time = KEY_MANUALLY_DISABLED, "disabled by an administrator", now
        return keys, f"disabled {len(enabled)} keys", len(enabled)
    if action == "delete_key":
        key = _key_at(keys, req.key_index)
        if len(keys) == 1:
            raise BadInput("cannot delete the last key of a channel (delete the channel instead)")
        return [k for k in keys if k is not key], "key deleted", None
    # delete_disabled_keys: new-api's deletes the automatically disabled ones (status 3)
    kept = [k for k in keys if k.status != KEY_AUTO_DISABLED]
    deleted = len(keys) - len(kept)
    if not deleted:
        raise BadInput("no automatically disabled key to delete")
    if not kept:
        raise BadInput("every key is automatically disabled: delete the channel instead")
    return kept, f"deleted {deleted} automatically disabled keys", deleted


@blueprint.post("/api/channel/multi_key/manage")
@require(m.ROLE_ADMIN)
@validate_request(MultiKeyManage)
@document_response(Managed)
async def manage_multi_keys(data: MultiKeyManage, me: Principal) -> Response:
    """``{channel_id, action, key_index, page, page_size, status}``; ``get_key_status``
    answers a page of ``{index, status, disabled_time, reason, key_preview}`` with the
    counts per status; the other actions change the keys (``delete_*`` rewrite the key
    text and re-index the states)."""
    gw = gateway()
    for _ in range(WRITE_ATTEMPTS):
        row = await m.Channel.get_or_none(id=data.channel_id)
        if row is None:
            return fail("channel not found")
        info = read_info(row.channel_info)
        if not is_multi_key(info):
            return fail("this channel is not a multi-key channel")
        key_text = gw.box.decrypt(row.key_enc, f"channel:{row.id}") if row.key_enc else ""
        keys = load_keys(key_text, info)
        if data.action == "get_key_status":
            return ok(key_status_page(keys, data))
        keys, message, result = apply_action(keys, data, int(time.time()))
        new_text = "\n".join(k.text for k in keys)
        changes: dict[str, Any] = {"channel_info": jsonutil.dumps_str(dump_info(info, keys))}
        if new_text != key_text:
            changes["key_enc"] = gw.box.encrypt(new_text, f"channel:{row.id}")
        # only if nobody changed the keys or their state since they were read
        if await m.Channel.filter(id=row.id, key_enc=row.key_enc, channel_info=row.channel_info).update(**changes):
            await gw.feed.publish("channel", row.id)
            return ok(result, message=message)
    return fail("the channel's keys changed meanwhile; try again")
