"""Login sessions: the signed ``session`` cookie (``SESSION_SECRET``, the same on every
node) and the per-user session version that revokes them.

A login writes a fresh session (the old cookie's content, anything an attacker planted
in it included, is discarded: no fixation) holding new-api's keys (``id``, ``username``,
``role``, ``status``, ``group``), a random ``sid`` and ``sv``, the user's session version.
Bumping the version (password change, role change, an admin removing a second factor)
revokes every session of the user at once: the session authenticator compares ``sv`` with
the version in the in-memory snapshot, which the change feed keeps current on every
worker and host, so the check costs no database read."""

from __future__ import annotations

import secrets

from quart import session
from tortoise.expressions import F

from faregate.db import models as m
from faregate.state.changefeed import ChangeFeed

#: session keys of a login waiting for its second step (new-api's names, plus the flow token)
PENDING_FLOW, PENDING_USER, PENDING_NAME = "pending_flow", "pending_user_id", "pending_username"


def start_session(row: m.User) -> None:
    """Replace whatever the session held with a login of ``row``."""
    session.clear()
    session.update({"id": row.id, "username": row.username, "role": row.role, "status": row.status,
                    "group": row.group, "sv": row.session_version, "sid": secrets.token_urlsafe(16)})
    session.permanent = True


async def revoke_sessions(feed: ChangeFeed, user_id: int) -> int:
    """Every login session of the user stops working (on every worker, at its next
    request); the new version, for a session the caller re-issues."""
    await m.User.filter(id=user_id).update(session_version=F("session_version") + 1)
    await feed.publish("user", user_id)
    row = await m.User.get_or_none(id=user_id).only("session_version")
    return row.session_version if row is not None else 0


async def renew_own_session(feed: ChangeFeed, user_id: int) -> None:
    """Revoke the user's sessions but keep the caller's, re-issued under the new version
    (a user who changes their password stays logged in here, and only here)."""
    await revoke_sessions(feed, user_id)
    row = await m.User.get_or_none(id=user_id)
    if row is not None:
        start_session(row)
