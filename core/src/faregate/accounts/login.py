"""The end of every login, whatever proved who the user is (a password, an OAuth provider,
Telegram, WeChat, a passkey): a banned user is refused, a user enrolled in a second factor
that guards logins (TOTP) gets new-api's ``require_2fa`` answer and finishes at
``POST /api/user/login/2fa``, everyone else gets a fresh session (and the browser becomes a
known device of the user, :mod:`faregate.management.devices`).

So no login method can skip the second factor: the methods never write the session
themselves, they all come through here.

A password login past the account's lock (:func:`locked_login`) gets the second step too,
whatever the password: only a right password and a second factor finish it.

These are the rules, answered as values: a :class:`LoginStep` (new-api's success ``data``
and ``message``, and what the session is to hold) or a
:class:`~faregate.accounts.errors.Refused`; the HTTP layer
(:mod:`faregate.management.login_answers`) writes the session and the device cookie and
puts either in new-api's envelope."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from faregate import jsonutil
from faregate.accounts.errors import Refused, too_many
from faregate.accounts.sessions import PENDING_FLOW, PENDING_NAME, PENDING_USER
from faregate.awaitables import await_me_maybe
from faregate.db import models as m
from faregate.security.passwords import check_login_password

if TYPE_CHECKING:
    from faregate.accounts.flows import Flows
    from faregate.contracts import SecondFactor

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


@dataclass(frozen=True, slots=True)
class LoginStep:
    """How a login went on: new-api's success ``data`` and ``message``; the session then
    holds ``pending`` alone (a login waiting for its second step) or, with ``started``, a
    fresh login of that user (whose browser becomes a known device)."""

    data: dict[str, Any]
    message: str = ""
    pending: dict[str, Any] | None = None
    started: m.User | None = None


def login_data(row: m.User) -> dict[str, Any]:
    """new-api's login answer."""
    return {"id": row.id, "username": row.username, "display_name": row.display_name, "role": row.role,
            "status": row.status, "group": row.group}


def guards_login(factor: SecondFactor) -> bool:
    return bool(getattr(factor, "at_login", False))


async def login_factors(user_id: int, factors: Iterable[SecondFactor]) -> list[SecondFactor]:
    """The installed second ``factors`` that guard logins and that this user has set up."""
    found = []
    for factor in factors:
        if guards_login(factor) and await await_me_maybe(factor.enrolled(user_id)):
            found.append(factor)
    return found


async def complete_login(row: m.User, method: str, flows: Flows, factors: Iterable[SecondFactor], *,
                         second_factor_done: bool = False) -> LoginStep:
    """The end of a login by ``method``; ``factors``: the installed second factors.
    :class:`Refused` for a banned user."""
    if row.status != m.USER_ENABLED:
        raise Refused(BANNED)
    if not second_factor_done and await login_factors(row.id, factors):
        # the password (or provider) was right; the session is not a login yet
        payload = jsonutil.dumps_str({"method": method, "sv": row.session_version})
        token = await flows.issue(PENDING_PURPOSE, ttl=PENDING_TTL, user_id=row.id, payload=payload)
        return LoginStep({"require_2fa": True, "flow_token": token, "expires_at": int(time.time()) + PENDING_TTL},
                         "two-factor authentication required: POST /api/user/login/2fa with your code",
                         pending={PENDING_FLOW: token, PENDING_USER: row.id, PENDING_NAME: row.username})
    return LoginStep(login_data(row), started=row)


async def locked_login(row: m.User | None, password: str, wait: float, flows: Flows,
                       factors: Iterable[SecondFactor]) -> LoginStep:
    """A password login of an account locked by failures from many addresses, from a client
    that is not a known device. The password is checked (it costs the same right or wrong)
    but not told: every such login gets the second step, whose flow remembers whether the
    password was right, so only a right password *and* a second factor start a session (a
    wrong password's step, an unknown name's or a banned user's fails there as a wrong code
    does). With no factor that guards logins installed there is no such step: the 429
    (:class:`Refused`)."""
    if not any(guards_login(factor) for factor in factors):
        raise too_many("failed login attempts on this account", wait)
    right = await check_login_password(row.password_hash if row is not None else None, password)
    genuine = right and row is not None and row.status == m.USER_ENABLED
    payload = jsonutil.dumps_str({"method": "password", "sv": row.session_version if row is not None else 0,
                                  PASSWORD_RIGHT: genuine})
    token = await flows.issue(PENDING_PURPOSE, ttl=PENDING_TTL, user_id=row.id if row is not None else 0,
                              payload=payload)
    # the session holds the flow alone, not the user's id and name as an unlocked step's does:
    # no name is confirmed
    return LoginStep({"require_2fa": True, "flow_token": token, "expires_at": int(time.time()) + PENDING_TTL},
                     LOCKED_STEP.format(wait=int(wait)), pending={PENDING_FLOW: token})
