"""The ended (logged-out) sessions the snapshot holds per user, so that checking a session
cookie needs no database read: each is an ``auth_flows`` row of purpose :data:`ENDED` holding
the hash of the session's ``sid`` until the login would have expired
(:mod:`faregate.accounts.sessions` writes them)."""

from __future__ import annotations

import time

from faregate.db import models as m

#: the ``auth_flows`` purpose of ended sessions' markers (subject ``user:<id>``)
ENDED = "session_ended"


async def ended_sessions(user_id: int) -> frozenset[str]:
    """The markers of the user's ended sessions (for the snapshot)."""
    rows = await m.AuthFlow.filter(purpose=ENDED, subject=f"user:{user_id}", expires_at__gt=int(time.time())
                                   ).values_list("secret_hash", flat=True)
    return frozenset(str(r) for r in rows)


async def ended_sessions_by_user() -> dict[int, frozenset[str]]:
    found: dict[int, set[str]] = {}
    rows = await m.AuthFlow.filter(purpose=ENDED, expires_at__gt=int(time.time())).values_list("user_id",
                                                                                                "secret_hash")
    for user_id, marker in rows:
        found.setdefault(int(user_id), set()).add(str(marker))
    return {user_id: frozenset(markers) for user_id, markers in found.items()}
