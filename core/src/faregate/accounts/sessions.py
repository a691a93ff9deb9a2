"""Login sessions: the signed ``session`` cookie (``SESSION_SECRET``, the same on every
node), the per-user session version that revokes them all, and the ended sessions that
revoke one.

A login writes a fresh session (the old cookie's content, anything an attacker planted
in it included, is discarded: no fixation) holding new-api's keys (``id``, ``username``,
``role``, ``status``, ``group``), a random ``sid``, ``at`` (when the login began) and ``sv``,
the user's session version. Bumping the version (password change, role change, an admin
removing a second factor) revokes every session of the user at once. A logout ends one:
its ``sid`` is remembered as ended (an ``auth_flows`` row, as a used Telegram login is) until
the login would have expired, so a copy of the cookie is refused too. The check compares
``sv`` and looks ``sid`` up in the in-memory snapshot, which the change feed keeps current on
every worker and host (Redis carries the signal when configured, the database otherwise), so
it costs no database read.

A login lasts :data:`SESSION_LIFETIME` from ``at``: the cookie is re-signed on every request,
so without ``at`` a copy kept in use would outlive the record of its logout.

This module keeps the rules (what a login holds, whether one is live, ending and revoking);
the HTTP layer (:mod:`faregate.management.login_session`) reads and writes the cookie."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tortoise.exceptions import IntegrityError
from tortoise.expressions import F

from faregate.db import models as m
from faregate.security.crypto import key_hash
from faregate.state.ended_sessions import ENDED

if TYPE_CHECKING:
    from faregate.principals import UserEntry
    from faregate.state.changefeed import ChangeFeed

#: how long a login lasts (new-api: the cookie's MaxAge, 30 days)
SESSION_LIFETIME = 30 * 24 * 3600
#: seconds of clock difference between nodes a session's ``at`` may show
CLOCK_SLACK = 300
#: ended sessions remembered per user; a logout past it ends all of the user's sessions
#: instead, so logging in and out in a loop cannot grow the table or the snapshot
MAX_ENDED_PER_USER = 100

#: session keys of a login waiting for its second step (new-api's names, plus the flow token)
PENDING_FLOW, PENDING_USER, PENDING_NAME = "pending_flow", "pending_user_id", "pending_username"


def session_values(row: m.User) -> dict[str, Any]:
    """What a fresh login of ``row`` holds (nothing of what the cookie held before)."""
    return {"id": row.id, "username": row.username, "role": row.role, "status": row.status, "group": row.group,
            "sv": row.session_version, "sid": secrets.token_urlsafe(16), "at": int(time.time())}


def ended_marker(sid: str) -> str:
    """What is stored of an ended session's ``sid`` (its hash: the row names no cookie)."""
    return key_hash("session:" + sid)


def live_login(user: UserEntry | None, data: Mapping[str, Any]) -> bool:
    """Whether the session ``data`` is a live login of ``user``: of the user's current
    session version, begun less than :data:`SESSION_LIFETIME` ago, not logged out. No
    database read."""
    if user is None or data.get("sv", 0) != user.session_version:
        return False
    began, sid = data.get("at"), data.get("sid")
    if not isinstance(began, int) or not isinstance(sid, str):
        return False
    return -CLOCK_SLACK <= time.time() - began < SESSION_LIFETIME and ended_marker(sid) not in user.ended_sessions


async def revoke_sessions(feed: ChangeFeed, user_id: int) -> int:
    """Every login session of the user stops working (on every worker, at its next
    request); the new version, for a session the caller re-issues."""
    await m.User.filter(id=user_id).update(session_version=F("session_version") + 1)
    await feed.publish("user", user_id)
    row = await m.User.get_or_none(id=user_id).only("session_version")
    return row.session_version if row is not None else 0


async def record_ended(feed: ChangeFeed, user: UserEntry, data: Mapping[str, Any]) -> None:
    """Remember the live login ``data`` of ``user`` as ended (a logout), so a copy of its
    cookie stops working on every worker and node; past :data:`MAX_ENDED_PER_USER` every
    session of the user ends instead."""
    sid, began = str(data.get("sid")), int(data.get("at") or 0)
    subject, now = f"user:{user.id}", int(time.time())
    await m.AuthFlow.filter(purpose=ENDED, subject=subject, expires_at__lte=now).delete()
    if await m.AuthFlow.filter(purpose=ENDED, subject=subject).count() >= MAX_ENDED_PER_USER:
        await m.AuthFlow.filter(purpose=ENDED, subject=subject).delete()
        await revoke_sessions(feed, user.id)  # the version ends them all, this one included
        return
    try:
        await m.AuthFlow.create(purpose=ENDED, subject=subject, secret_hash=ended_marker(sid), user_id=user.id,
                                expires_at=began + SESSION_LIFETIME + CLOCK_SLACK, created_at=now)
    except IntegrityError:
        return  # a racing logout of the same session recorded it
    await feed.publish("user", user.id)
