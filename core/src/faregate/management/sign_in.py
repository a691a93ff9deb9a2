"""Signing up with a password (``POST /api/user/register``) and the second step of a login
(``POST /api/user/login/2fa``), new-api's contracts.

Sign-up follows the options ``RegisterEnabled``, ``PasswordRegisterEnabled`` and
``EmailVerificationEnabled`` (the code comes from ``GET /api/verification``, which the
faregate-auth-email plugin serves; the code is checked here, from the one-time secrets
store, so the core never calls the plugin), and is rate limited per client IP (new-api's
CriticalRateLimit) and per invitation code (:meth:`Accounts.invitation_refused`). The
second step checks the code with the installed second factor that guards logins (TOTP), at
most five guesses per code through the login throttle, and only then starts the session."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints
from quart import Blueprint, Response, current_app, session
from quart_schema import document_response, validate_request

from faregate import jsonutil
from faregate.accounts.login import PASSWORD_RIGHT, PENDING_PURPOSE
from faregate.accounts.service import EMAIL_VERIFICATION, normalize_email
from faregate.accounts.sessions import PENDING_FLOW
from faregate.accounts.signup import SignupError, create_account
from faregate.awaitables import await_me_maybe
from faregate.db import models as m
from faregate.management import missing_methods
from faregate.management.common import fail, gateway, guarded, ok, public
from faregate.management.login_answers import complete_login
from faregate.management.openapi import Body, Done, Ok
from faregate.management.system import PASSWORD_MAX, PASSWORD_MIN
from faregate.management.users import LoginData
from faregate.security.passwords import hash_password_async

blueprint = Blueprint("sign_in", __name__)

WRONG_CODE = "the code is wrong: check your authenticator or use a backup code"


class SecondStep(Body):
    """``{code}``: a TOTP code or a backup code; ``flow_token`` from the first step (newer
    new-api clients send it; older ones rely on the session)."""

    code: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
    flow_token: Annotated[str, Field(max_length=128)] = ""


@blueprint.post("/api/user/login/2fa")
@public
@guarded
@validate_request(SecondStep)
@document_response(Ok[LoginData])
async def login_second_step(data: SecondStep) -> Response:
    gw = gateway()
    factors = [f for f in gw.second_factors.values() if getattr(f, "at_login", False)]
    if not factors:
        return fail("two-factor login is not available: no 2fa plugin (faregate-auth-totp) is installed")
    token = data.flow_token or str(session.get(PENDING_FLOW) or "")
    accounts = gw.services.accounts
    pending = await accounts.flows.peek(PENDING_PURPOSE, token)
    if pending is None:
        return fail("no login is waiting for a second step, or it has expired: log in again")
    # per client only: a locked account's login hands this step to anyone, whatever the
    # password, so a total over every client would let guessers lock the owner out of it
    refused = await accounts.throttled(f"#2fa:{pending.user_id}", account_wide=False)
    if refused is not None:
        return refused
    stored = jsonutil.loads(pending.payload or "{}")
    row = await m.User.get_or_none(id=pending.user_id)
    if stored.get(PASSWORD_RIGHT, True) is not True:
        # a locked login's step of a wrong password (or an unknown or banned user): it fails
        # as a wrong code does, with the reads of a user without a factor, and the factor
        # never counts it (its own lockout would otherwise be anyone's to trigger). A user
        # with one spends a check more on a right password: what an unlocked login tells
        # anyway (its second step follows a right password only), so the lock adds no oracle
        for factor in factors:
            await await_me_maybe(factor.enrolled(pending.user_id))
        return fail(WRONG_CODE)
    if row is None or row.session_version != stored.get("sv"):  # the password changed meanwhile
        return fail("the login has expired: log in again")
    for factor in factors:
        if await await_me_maybe(factor.enrolled(row.id)) and await await_me_maybe(
                factor.verify(row.id, data.code, session)):
            break
    else:
        return fail(WRONG_CODE)
    if await accounts.flows.take(PENDING_PURPOSE, token) is None:  # a concurrent request used it first
        return fail("the login has expired: log in again")
    await accounts.throttle_passed(f"#2fa:{pending.user_id}", account_wide=False)
    return await complete_login(row, str(stored.get("method") or "password"), second_factor_done=True)


class Registration(Body):
    """new-api's sign-up form: ``aff_code`` is the inviter's invitation code; ``email`` and
    ``verification_code`` count when ``EmailVerificationEnabled`` is on; ``password2`` is
    its form's confirmation (when sent, it must match)."""

    username: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=20)]
    password: Annotated[str, Field(min_length=PASSWORD_MIN, max_length=PASSWORD_MAX)]
    password2: Annotated[str, Field(max_length=PASSWORD_MAX)] | None = None
    email: Annotated[str, StringConstraints(strip_whitespace=True, max_length=128)] = ""
    verification_code: Annotated[str, StringConstraints(strip_whitespace=True, max_length=32)] = ""
    aff_code: Annotated[str, StringConstraints(strip_whitespace=True, max_length=32)] = ""


@blueprint.post("/api/user/register")
@public
@guarded
@validate_request(Registration)
@document_response(Done)
async def register(data: Registration) -> Response:
    gw = gateway()
    options = gw.snapshot.options
    if not options.value("RegisterEnabled"):
        return fail("new registrations are closed by the administrator")
    if not options.value("PasswordRegisterEnabled"):
        return fail("registration with a username and password is closed; use another sign-in method")
    accounts = gw.services.accounts
    # every attempt counts (as new-api's CriticalRateLimit), a failed one too: it bounds
    # probing for taken names and guessing email codes as well as making accounts
    refused = await accounts.signup_refused()
    if refused is not None:
        return refused
    if data.password2 is not None and data.password2 != data.password:
        return fail("the two passwords differ", status=400)
    email = ""
    if options.value("EmailVerificationEnabled"):
        if "faregate-auth-email" in missing_methods.absent(current_app):  # refused still: the option says so
            return fail("email verification is on, but no code can be sent: the faregate-auth-email plugin "
                        "(GET /api/verification) is not installed; an administrator must install it or turn "
                        "EmailVerificationEnabled off")
        email = normalize_email(data.email)
        if not email or not data.verification_code:
            return fail("email verification is on: send the code to your address first (GET /api/verification)")
        problem = accounts.email_problem(email)
        if problem is not None:
            return fail(problem, status=400)
        refused = await accounts.throttled(f"#email:{email}")
        if refused is not None:
            return refused
        if await accounts.take_code(EMAIL_VERIFICATION, email, data.verification_code) is None:
            return fail("the verification code is wrong or has expired")
        await accounts.throttle_passed(f"#email:{email}")
        if await accounts.email_taken(email):
            return fail("the email address is already in use")
    if await m.User.filter(username=data.username).exists():  # before the invitation's budget is spent
        return fail("the username is already taken")
    refused = await accounts.invitation_refused(data.aff_code)
    if refused is not None:
        return refused
    password_hash = await hash_password_async(data.password)
    try:
        row, touched = await create_account(options, username=data.username, password_hash=password_hash, email=email,
                                            inviter_code=data.aff_code, exact_username=True)
    except SignupError as exc:
        return fail(str(exc))
    for user_id in (row.id, *touched):
        await gw.feed.publish("user", user_id)
    return ok()
