"""One conditional update of a multi-key channel's key state (``multi_key_status_list`` in
``channel_info``, as the multi-key manage route writes it), shared by the relay disabling a
dead key and the channel monitor enabling a key whose test passed again."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate import jsonutil
from faregate.db import models as m
from faregate.state.multi_keys import Key, dump_info, load_keys, read_info

if TYPE_CHECKING:
    from faregate.exchange.host import ExchangeHost

#: how often a key write is tried again when another write changed the row first
WRITE_ATTEMPTS = 3

#: changes ``keys[index]`` in place and answers the channel's new status (None: unchanged),
#: given the channel's current status
KeyEdit = Callable[[list[Key], int, int], int | None]


async def rewrite_key(gw: ExchangeHost, channel_id: int, key: str, expect: int,
                      edit: KeyEdit) -> tuple[int, bool] | None:
    """Apply ``edit`` to the channel's ``key`` when its status is ``expect``, by a conditional
    update (tried again when another write came first); the channel's abilities follow a new
    channel status, and every worker hears of the change. Answers the key's index and whether
    the channel's status changed, or None when nothing was written."""
    for _ in range(WRITE_ATTEMPTS):
        row = await m.Channel.get_or_none(id=channel_id)
        if row is None or not row.key_enc:
            return None
        info = read_info(row.channel_info)
        keys = load_keys(gw.box.decrypt(row.key_enc, f"channel:{row.id}"), info)
        index = next((i for i, k in enumerate(keys) if k.text == key), None)
        if index is None or keys[index].status != expect:
            return None
        status = edit(keys, index, row.status)
        changes: dict[str, object] = {"channel_info": jsonutil.dumps_str(dump_info(info, keys))}
        if status is not None:
            changes["status"] = status
        if await m.Channel.filter(id=row.id, key_enc=row.key_enc, channel_info=row.channel_info).update(**changes):
            if status is not None:
                await m.Ability.filter(channel_id=row.id).update(enabled=status == m.CHANNEL_ENABLED)
            await gw.feed.publish("channel", row.id)
            return index, status is not None
    return None
