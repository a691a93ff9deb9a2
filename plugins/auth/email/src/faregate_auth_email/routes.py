"""new-api's email routes: a sign-up (or binding) code, a password reset link, the reset
itself, and binding an address to the logged-in user.

Every code and token is a one-time secret of the core (``services.accounts``): stored as a
keyed hash, used once, dead after its time and after five wrong guesses; every guess goes
through the login throttle, per address and per client. Sends have their own rate limits
(new-api's EmailVerificationRateLimit per client IP, checked before anything else, and one per
address), so asking for mail never locks a client out of logging in.

Neither request tells whether an address has an account: a code request for a taken address
sends the owner a note instead of a code and answers the same; a reset request answers at
once and looks the address up, and mails, after the answer."""

from __future__ import annotations

import logging
import secrets
import string
from typing import Annotated
from urllib.parse import quote

from pydantic import Field, StringConstraints
from quart import Blueprint, Response, request
from quart_schema import document_response, validate_request

from faregate.api import (
    EMAIL_VERIFICATION,
    ROLE_USER,
    BadInput,
    Body,
    Done,
    Ok,
    Principal,
    Services,
    fail,
    guarded,
    ok,
    public,
    require,
)
from faregate_auth_email.mailer import Mailer, MailError
from faregate_auth_email.texts import CODE_MINUTES, RESET_MINUTES, code_mail, reset_mail, taken_mail

log = logging.getLogger("faregate_auth_email")

PASSWORD_RESET = "password_reset"
#: the window of the per-address send limit (``email_sends_per_address``)
ADDRESS_WINDOW = 900
EMAIL_MAX = 128
_NEW_PASSWORD = string.ascii_letters + string.digits

Email = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=EMAIL_MAX)]


def _query_email() -> str:
    email = request.args.get("email", "").strip().lower()
    if not email or len(email) > EMAIL_MAX or any(c in email for c in "\x00\r\n"):
        raise BadInput(f"email: an address of at most {EMAIL_MAX} characters is required", status=400)
    return email


class ResetRequest(Body):
    """``{email, token}`` from the reset link."""

    email: Email
    token: Annotated[str, Field(min_length=1, max_length=128)]


class BindRequest(Body):
    email: Email
    code: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=32)]


def make_blueprint(services: Services) -> Blueprint:
    blueprint = Blueprint("auth_email", __name__)
    accounts = services.accounts
    mailer = Mailer(services)

    async def send_refused(email: str) -> Response | None:
        """The send limits: per client IP (before anything is looked at, as new-api's
        middleware), then per address (a mailbox cannot be flooded from many clients)."""
        settings = services.settings
        refused = await accounts.rate_limited("email_send", limit=int(settings.get("email_sends_per_ip", 2)),
                                              window=float(settings.get("email_send_window_seconds", 30)))
        if refused is None:
            refused = await accounts.rate_limited("email_send_to", key=email, window=ADDRESS_WINDOW,
                                                  limit=int(settings.get("email_sends_per_address", 5)))
        return refused

    @blueprint.get("/api/verification")
    @public
    @guarded
    @document_response(Done)
    async def send_code() -> Response:
        """``?email=``: a six-digit code for signing up (or binding the address), valid ten
        minutes; refused for an address outside the domain rules. An address in use gets
        a note instead of a code, under the same answer."""
        email = _query_email()
        refused = await send_refused(email)
        if refused is not None:
            return refused
        problem = accounts.email_problem(email)
        if problem is not None:
            return fail(problem)
        if await accounts.email_taken(email):
            subject, html = taken_mail(services.options.system_name)
        else:
            code = f"{secrets.randbelow(10**6):06d}"
            await accounts.issue_secret(EMAIL_VERIFICATION, ttl=CODE_MINUTES * 60, secret=code, subject=email)
            subject, html = code_mail(services.options.system_name, code)
        try:
            await mailer.send(email, subject, html)
        except MailError as exc:
            return fail(str(exc))
        return ok(message="check your mailbox: the code is on its way")

    async def mail_reset_link(email: str) -> None:
        try:
            account = await accounts.by_email(email)
            if account is None or not mailer.configured:
                return
            token = await accounts.issue_secret(PASSWORD_RESET, ttl=RESET_MINUTES * 60, subject=email,
                                                user_id=account.id)
            base = str(services.options.value("ServerAddress")).rstrip("/")
            link = f"{base}/user/reset?email={quote(email)}&token={quote(token)}"
            subject, html = reset_mail(services.options.system_name, link)
            await mailer.send(email, subject, html)
        except MailError:
            pass  # logged by the mailer
        except Exception:  # nobody awaits this task: say what failed here
            log.exception("sending a password reset link failed")

    @blueprint.get("/api/reset_password")
    @public
    @guarded
    @document_response(Done)
    async def send_reset_link() -> Response:
        """``?email=``: a one-time reset link to the address, if an account has it. The
        address is looked up and the mail sent after the answer, so neither the answer nor
        its timing tells which addresses are users."""
        email = _query_email()
        refused = await send_refused(email)
        if refused is not None:
            return refused
        services.spawn(mail_reset_link(email))
        return ok(message="if an account has this address, a reset link is on its way")

    @blueprint.post("/api/user/reset")
    @public
    @guarded
    @validate_request(ResetRequest)
    @document_response(Ok[str])
    async def reset_password(data: ResetRequest) -> Response:
        """``{email, token}``: new-api answers a new random password in ``data`` (shown once,
        never stored in clear); every session of the account ends."""
        email = data.email.lower()
        refused = await accounts.throttled(f"#reset:{email}")
        if refused is not None:
            return refused
        found = await accounts.take_secret(PASSWORD_RESET, data.token, subject=email)
        if found is None:
            return fail("the reset link is invalid or has expired")
        await accounts.throttle_passed(f"#reset:{email}")
        password = "".join(secrets.choice(_NEW_PASSWORD) for _ in range(12))
        await accounts.set_password(found.user_id, password)
        await accounts.record(found.user_id, "password reset by email")
        response = ok(password, "the password was reset: log in with the new one and change it")
        response.headers["Cache-Control"] = "no-store"
        return response

    @blueprint.post("/api/oauth/email/bind")
    @require(ROLE_USER)
    @validate_request(BindRequest)
    @document_response(Done)
    async def bind_email(data: BindRequest, me: Principal) -> Response:
        """``{email, code}``: the address, proven by a code from ``/api/verification``,
        becomes the user's."""
        email = data.email.lower()
        problem = accounts.email_problem(email)
        if problem is not None:
            return fail(problem)
        refused = await accounts.throttled(f"#email:{email}")
        if refused is not None:
            return refused
        if await accounts.take_code(EMAIL_VERIFICATION, email, data.code) is None:
            return fail("the verification code is wrong or has expired")
        await accounts.throttle_passed(f"#email:{email}")
        if not await accounts.set_email(me.user.id, email):
            return fail("the email address is already in use")
        return ok(message="email bound")

    return blueprint
