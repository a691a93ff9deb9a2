"""The end of every login, whatever proved who the user is (a password, an OAuth provider,
Telegram, WeChat, a passkey): a banned user is refused, a user enrolled in a second factor
that guards logins (TOTP) gets new-api's ``require_2fa`` answer and finishes at
``POST /api/user/login/2fa``, everyone else gets a fresh session.

So no login method can skip the second factor: the methods never write the session
themselves, they all come through here."""

from __future__ import annotations

import time
from typing import Any

from quart import Response, session

from faregate import jsonutil
from faregate.accounts.sessions import PENDING_FLOW, PENDING_NAME, PENDING_USER, start_session
from faregate.awaitables import await_me_maybe
from faregate.db import models as m

#: how long the second step of a login may wait (new-api: 5 minutes)
PENDING_TTL = 300
PENDING_PURPOSE = "login_2fa"
BANNED = "the user has been banned"


def login_data(row: m.User) -> dict[str, Any]:
    """new-api's login answer."""
    return {"id": row.id, "username": row.username, "display_name": row.display_name, "role": row.role,
            "status": row.status, "group": row.group}


async def login_factors(user_id: int) -> list[Any]:
    """The installed second factors that guard logins and that this user has set up."""
    from faregate.management.common import gateway

    found = []
    for factor in gateway().second_factors.values():
        if getattr(factor, "at_login", False) and await await_me_maybe(factor.enrolled(user_id)):
            found.append(factor)
    return found


async def complete_login(row: m.User, method: str, *, second_factor_done: bool = False) -> Response:
    from faregate.management.common import fail, gateway, ok

    if row.status != m.USER_ENABLED:
        return fail(BANNED)
    if not second_factor_done and await login_factors(row.id):
        # the password (or provider) was right; the session is not a login yet
        payload = jsonutil.dumps_str({"method": method, "sv": row.session_version})
        token = await gateway().services.accounts.flows.issue(PENDING_PURPOSE, ttl=PENDING_TTL, user_id=row.id,
                                                     payload=payload)
        session.clear()
        session.update({PENDING_FLOW: token, PENDING_USER: row.id, PENDING_NAME: row.username})
        return ok({"require_2fa": True, "flow_token": token, "expires_at": int(time.time()) + PENDING_TTL},
                  "two-factor authentication required: POST /api/user/login/2fa with your code")
    start_session(row)
    return ok(login_data(row))
