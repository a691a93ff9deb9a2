"""The end of every login, whatever proved who the user is (a password, an OAuth provider,
Telegram, WeChat, a passkey): a banned user is refused, a user enrolled in a second factor
that guards logins (TOTP) gets new-api's ``require_2fa`` answer and finishes at
``POST /api/user/login/2fa``, everyone else gets a fresh session (and the browser becomes a
known device of the user, :mod:`faregate.accounts.devices`).

So no login method can skip the second factor: the methods never write the session
themselves, they all come through here.

A password login past the account's lock (:func:`locked_login`) gets the second step too,
whatever the password: only a right password and a second factor finish it."""

from __future__ import annotations

import time
from typing import Any

from quart import Response, session

from faregate import jsonutil
from faregate.accounts.devices import remember_device
from faregate.accounts.sessions import PENDING_FLOW, PENDING_NAME, PENDING_USER, start_session
from faregate.awaitables import await_me_maybe
from faregate.db import models as m
from faregate.security.passwords import check_login_password

#: how long the second step of a login may wait (new-api: 5 minutes)
PENDING_TTL = 300
PENDING_PURPOSE = "login_2fa"
BANNED = "the user has been banned"
#: the pending login's payload key telling whether its first step was right: false for a
#: locked account's step of a wrong password (absent: right, the only kind made unlocked)
PASSWORD_RIGHT = "pw"
#: the answer to every password login past the account's lock, right password or wrong
LOCKED_STEP = ("too many failed logins on this account: finish with your two-factor code, or sign in from a "
               "browser you signed in from before (or with a passkey), or try again in {wait} seconds")


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
    remember_device(row.id)
    return ok(login_data(row))


async def locked_login(row: m.User | None, password: str, wait: float) -> Response:
    """A password login of an account locked by failures from many addresses, from a client
    that is not a known device. The password is checked (it costs the same right or wrong)
    but not told: every such login gets the second step, whose flow remembers whether the
    password was right, so only a right password *and* a second factor start a session (a
    wrong password's step, an unknown name's or a banned user's fails there as a wrong code
    does). With no factor that guards logins installed there is no such step: the 429."""
    from faregate.management.common import gateway, ok, too_many

    gw = gateway()
    if not any(getattr(factor, "at_login", False) for factor in gw.second_factors.values()):
        return too_many("failed login attempts on this account", wait)
    right = await check_login_password(row.password_hash if row is not None else None, password)
    genuine = right and row is not None and row.status == m.USER_ENABLED
    payload = jsonutil.dumps_str({"method": "password", "sv": row.session_version if row is not None else 0,
                                  PASSWORD_RIGHT: genuine})
    token = await gw.services.accounts.flows.issue(PENDING_PURPOSE, ttl=PENDING_TTL,
                                                   user_id=row.id if row is not None else 0, payload=payload)
    session.clear()
    session[PENDING_FLOW] = token  # not the user's id and name, as an unlocked step has: no name is confirmed
    return ok({"require_2fa": True, "flow_token": token, "expires_at": int(time.time()) + PENDING_TTL},
              LOCKED_STEP.format(wait=int(wait)))
