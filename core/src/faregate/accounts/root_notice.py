"""Telling the root user (new-api's ``NotifyRootUser``): the way the root's own settings say
(``notify_type``; email, the default, through the email plugin's SMTP), in a background task."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from faregate.accounts.notify import Notification, Notifier, NotifyTarget, user_target
from faregate.db import models as m

log = logging.getLogger("faregate")

#: new-api's ``dto.NotifyTypeChannelUpdate``
CHANNEL_UPDATE = "channel_update"


async def notify_root(notifiers: Mapping[str, Notifier],
                      spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]], note: Notification) -> bool:
    """Send ``note`` to the first root user; False when there is none or no way to tell them
    (no notifier of their kind, or email without an address)."""
    row = await m.User.filter(role=m.ROLE_ROOT).order_by("id").first()
    if row is None:
        return False
    target, kind = user_target(row.id, row.username, row.email, row.setting)
    notifier = notifiers.get(kind)
    if notifier is None or (kind == "email" and not target.email):
        log.info("root notice not sent (%s): the root user has no way to be told (%s)", note.title, kind)
        return False
    spawn(_send(notifier, target, note))
    return True


async def _send(notifier: Notifier, target: NotifyTarget, note: Notification) -> None:
    try:
        await notifier.send(target, note)
    except Exception as exc:  # noqa: BLE001 - a notifier's failure is logged, never raised
        log.warning("root notice %r by %s failed: %s", note.title, notifier.kind, str(exc) or type(exc).__name__)
    else:
        log.info("root notice %r sent by %s", note.title, notifier.kind)


def channel_disabled(name: str, channel_id: int, reason: str) -> Notification:
    """new-api's words when a channel is disabled automatically."""
    title = f"通道「{name}」（#{channel_id}）已被禁用"
    return Notification(CHANNEL_UPDATE, title, f"{title}，原因：{reason}")


def channel_enabled(name: str, channel_id: int) -> Notification:
    """new-api's words when a channel is enabled again automatically."""
    title = f"通道「{name}」（#{channel_id}）已被启用"
    return Notification(CHANNEL_UPDATE, title, title)
