"""An admin removes a user's second factor (new-api's "Admin Disable User 2FA" and
"Admin Reset User Passkey"), for a user who lost the device. The factors themselves are
plugins (``register_second_factors``): without the plugin the answer says so, instead of
pretending there was nothing to remove."""

from __future__ import annotations

import time

from quart import Blueprint, Response

from faregate.accounts.sessions import revoke_sessions
from faregate.awaitables import await_me_maybe
from faregate.db import models as m
from faregate.management.common import fail, gateway, ok, parse_id, require
from faregate.management.user_admin import may_manage
from faregate.principals import Principal

blueprint = Blueprint("user_factors", __name__)

#: what each factor is called in answers
FACTOR_NAMES = {"2fa": "two-factor authentication (2FA)", "passkey": "passkey login"}


async def _reset(user_id: str, method: str, me: Principal) -> Response:
    name = FACTOR_NAMES[method]
    factor = gateway().second_factors.get(method)
    if factor is None:
        return fail(f"{name} is not available: no {method} plugin is installed, so no user has one to remove")
    row = await m.User.get_or_none(id=parse_id(user_id))
    if row is None:
        return fail("user not found")
    if not may_manage(me, row):
        return fail("permission denied: you cannot change a user of the same or a higher role")
    if not await await_me_maybe(factor.reset(row.id)):
        return fail(f"this user has no {name} set up")
    await revoke_sessions(gateway().feed, row.id)  # as new-api: whoever held a session must log in again
    await m.Log.create(user_id=row.id, username=row.username, type=m.LOG_MANAGE, created_at=int(time.time()),
                       content=f"admin {me.user.username} removed the user's {name}")
    return ok(message=f"{name} removed")


@blueprint.delete("/api/user/<user_id>/2fa")
@require(m.ROLE_ADMIN)
async def disable_user_2fa(user_id: str, me: Principal) -> Response:
    return await _reset(user_id, "2fa", me)


@blueprint.delete("/api/user/<user_id>/reset_passkey")
@require(m.ROLE_ADMIN)
async def reset_user_passkey(user_id: str, me: Principal) -> Response:
    return await _reset(user_id, "passkey", me)
