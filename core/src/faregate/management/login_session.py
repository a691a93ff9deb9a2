"""The login session cookie as the HTTP layer writes it: a fresh login, a logout, a
session kept across its user's revocation. The rules (what a login holds, whether one is
live, how an ended one is remembered) are :mod:`faregate.accounts.sessions`'."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from quart import session

from faregate.accounts.sessions import live_login, record_ended, revoke_sessions, session_values
from faregate.db import models as m

if TYPE_CHECKING:
    from faregate.principals import UserEntry
    from faregate.state.changefeed import ChangeFeed


def start_session(row: m.User) -> None:
    """Replace whatever the session held with a login of ``row``."""
    session.clear()
    session.update(session_values(row))
    session.permanent = True


async def end_session(feed: ChangeFeed, users: Mapping[int, UserEntry]) -> None:
    """Log out: the session is cleared and, when it was a live login, remembered as ended,
    so a copy of its cookie stops working on every worker and node."""
    data = dict(session)
    user = users.get(int(data.get("id") or 0))
    live = live_login(user, data)
    session.clear()
    if live and user is not None:
        await record_ended(feed, user, data)


async def renew_own_session(feed: ChangeFeed, user_id: int) -> None:
    """Revoke the user's sessions but keep the caller's, re-issued under the new version
    (a user who changes their password stays logged in here, and only here)."""
    await revoke_sessions(feed, user_id)
    row = await m.User.get_or_none(id=user_id)
    if row is not None:
        start_session(row)
