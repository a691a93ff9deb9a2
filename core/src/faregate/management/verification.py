"""Secure verification (new-api's ``POST /api/verify``): before a secret is revealed (a
channel's key) the logged-in user proves again who they are, and the session remembers
it for five minutes.

A user enrolled in a second factor (an installed ``register_second_factors`` plugin) must
use it. A user enrolled in none may re-enter the account password instead: new-api has
no such fallback, so without a 2FA or passkey plugin no channel key could ever be
revealed; the password still keeps a stolen session cookie alone from reading secrets.
Attempts go through the login throttle, keyed by the user, so codes and passwords cannot
be guessed through this door either."""

from __future__ import annotations

import functools
import time
from typing import Annotated, Any

from pydantic import BaseModel, Field
from quart import Blueprint, Response, request, session
from quart_schema import document_response, validate_request

from faregate.awaitables import await_me_maybe
from faregate.db import models as m
from faregate.management.common import View, fail, gateway, ok, require, too_many
from faregate.management.openapi import Body
from faregate.management.users import login_throttle
from faregate.principals import Principal
from faregate.security.passwords import check_login_password

blueprint = Blueprint("verification", __name__)

#: the session keys new-api uses for a secure verification
VERIFIED_AT, VERIFIED_METHOD, VERIFIED_USER = "secure_verified_at", "secure_verified_method", "secure_verified_user"
#: how long one verification opens the door (new-api: 300 s)
WINDOW = 300
PASSWORD = "password"


def clock() -> int:
    """Now, in unix seconds (tests move it to expire a verification)."""
    return int(time.time())


#: new-api's factor names: without their plugin the answer names what is missing
KNOWN_FACTORS = ("2fa", "passkey")


class VerifyRequest(Body):
    """``{method, code}``: ``password``, or the method of an installed second factor (new-api's
    ``2fa`` and ``passkey``, or a plugin's own); ``scope`` is what newer new-api clients send
    (accepted, unused: one verification opens every protected route for the window, as in
    new-api v0.12)."""

    method: Annotated[str, Field(pattern=r"^[a-z0-9_-]{1,32}$")]
    # a WebAuthn assertion as JSON fits well within this; a TOTP code or a password is far shorter
    code: Annotated[str, Field(max_length=16_384)] = ""
    scope: Annotated[str, Field(max_length=64)] = ""


class VerifiedData(BaseModel):
    verified: bool
    method: str
    expires_at: int


class Verified(BaseModel):
    success: bool
    message: str
    data: VerifiedData


def guess_key(user_id: int) -> str:
    """The login throttle's account key for guesses at a logged-in user's password or code
    (here and at a password change): one budget, whichever door a stolen session knocks at."""
    return f"#verify:{user_id}"


def recently_verified(user_id: int) -> bool:
    """Whether this session passed a secure verification of ``user_id`` within the window."""
    verified_at = session.get(VERIFIED_AT)
    return (isinstance(verified_at, int) and session.get(VERIFIED_USER) == user_id
            and 0 <= clock() - verified_at < WINDOW)


async def enrolled_methods(user_id: int) -> list[str]:
    """The second factors this user has set up, among the installed ones."""
    return [method for method, factor in gateway().second_factors.items()
            if await await_me_maybe(factor.enrolled(user_id))]


@blueprint.post("/api/verify")
@require(m.ROLE_USER)
@validate_request(VerifyRequest)
@document_response(Verified)
async def verify(data: VerifyRequest, me: Principal) -> Response:
    if me.via != "session":  # an access token has no session to remember the proof in
        return fail("secure verification needs a login session, not an access token", status=401)
    methods = sorted({PASSWORD, *KNOWN_FACTORS, *gateway().second_factors})
    if data.method not in methods:
        return fail(f"method must be one of: {', '.join(methods)}", status=400)
    code = data.code.strip() if data.method != PASSWORD else data.code
    factor = gateway().second_factors.get(data.method)
    # a passkey is verified by its own ceremony first (/api/user/passkey/verify/…): no code here
    if not code and getattr(factor, "needs_code", True):
        return fail("code must not be empty", status=400)
    enrolled = await enrolled_methods(me.user.id)
    if data.method == PASSWORD:
        if enrolled:
            return fail(f"this account has a second factor: verify with {' or '.join(enrolled)}")
    elif data.method not in gateway().second_factors:
        return fail(f"{data.method} verification is not available: no {data.method} plugin is installed"
                    + ("" if enrolled else "; verify with your password"))
    elif data.method not in enrolled:
        return fail(f"{data.method} is not set up for this account")
    throttle, client_ip, account = login_throttle(), request.remote_addr or "", guess_key(me.user.id)
    refusal = await throttle.attempt(client_ip, account)
    if refusal is not None:
        return too_many("failed verifications", refusal.wait)
    if data.method == PASSWORD:
        row = await m.User.get_or_none(id=me.user.id)
        passed = await check_login_password(row.password_hash if row is not None else None, code)
    else:
        factor = gateway().second_factors[data.method]
        passed = bool(await await_me_maybe(factor.verify(me.user.id, code, session)))
    if not passed:
        return fail("verification failed: check the code")
    await throttle.succeeded(client_ip, account)
    now = clock()
    session.update({VERIFIED_AT: now, VERIFIED_METHOD: data.method, VERIFIED_USER: me.user.id})
    return ok({"verified": True, "method": data.method, "expires_at": now + WINDOW}, "verified")


def clear_verification() -> None:
    for key in (VERIFIED_AT, VERIFIED_METHOD, VERIFIED_USER):
        session.pop(key, None)


def secure_verified(view: View) -> View:
    """Refuse unless the caller verified within :data:`WINDOW` seconds (new-api's
    SecureVerificationRequired: 403 with ``code`` VERIFICATION_REQUIRED / _EXPIRED /
    _INVALID). Goes under ``@require``, which passes ``me``."""

    @functools.wraps(view)
    async def wrapper(*args: Any, me: Principal, **kwargs: Any) -> Response:
        verified_at = session.get(VERIFIED_AT)
        if verified_at is None or me.via != "session":
            return fail("secure verification required: POST /api/verify first", status=403,
                        code="VERIFICATION_REQUIRED")
        if not isinstance(verified_at, int) or session.get(VERIFIED_USER) != me.user.id:
            clear_verification()
            return fail("the secure verification is invalid: verify again", status=403, code="VERIFICATION_INVALID")
        if not 0 <= clock() - verified_at < WINDOW:
            clear_verification()
            return fail("the secure verification has expired: verify again", status=403, code="VERIFICATION_EXPIRED")
        return await view(*args, me=me, **kwargs)

    return wrapper
