"""new-api's WeChat routes: ``GET /api/oauth/wechat?code=[&aff=]`` logs in the account bound
to the WeChat user, or signs one up (``wechat_<n>``) when registration is open, with the
invitation code ``aff`` (or the one the session keeps from ``/api/oauth/state?aff=``) as
every other sign-up;
``POST /api/oauth/wechat/bind {code}`` binds it to the logged-in user. Codes are guessed
only through the login throttle."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints
from quart import Blueprint, Response, request, session
from quart_schema import document_response, validate_request

from faregate.api import (
    ROLE_USER,
    BadInput,
    Body,
    Done,
    Principal,
    Services,
    SignupError,
    fail,
    guarded,
    ok,
    public,
    require,
)
from faregate_auth_wechat.server import WeChatRefused, openid_for

Code = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]


class BindBody(Body):
    code: Code


def make_blueprint(services: Services) -> Blueprint:
    blueprint = Blueprint("auth_wechat", __name__)
    accounts = services.accounts

    @blueprint.errorhandler(WeChatRefused)
    async def _refused(exc: WeChatRefused) -> Response:
        return fail(str(exc))

    async def guessed(code: str) -> str | Response:
        """The openid, or the throttle's 429: each guess of a code counts per client."""
        refused = await accounts.throttled(f"#wechat:{code}")
        if refused is not None:
            return refused
        openid = await openid_for(services, code)
        await accounts.throttle_passed(f"#wechat:{code}")
        return openid

    @blueprint.get("/api/oauth/wechat")
    @public
    @guarded
    async def login() -> Response:
        code = request.args.get("code", "").strip()
        if not code or len(code) > 64:
            raise BadInput("code: the code from the WeChat official account is required", status=400)
        openid = await guessed(code)
        if isinstance(openid, Response):
            return openid
        owner = await accounts.bound_user("wechat", openid)
        if owner is None:
            if not services.options.value("RegisterEnabled"):
                return fail("new registrations are closed by the administrator")
            aff = request.args.get("aff", "").strip() or str(session.get("aff") or "")
            if len(aff) > 32:
                raise BadInput("aff: an invitation code of at most 32 characters", status=400)
            # as a password sign-up: per client IP, and per invitation code
            refused = await accounts.signup_refused()
            if refused is None:
                refused = await accounts.invitation_refused(aff)
            if refused is not None:
                return refused
            try:
                owner = await accounts.create(username="", display_name="WeChat User", inviter_code=aff,
                                              prefix="wechat_")
            except SignupError as exc:
                return fail(str(exc))
            if not await accounts.bind(owner.id, "wechat", openid):
                return fail("the account could not be bound; try again")
        return await accounts.log_in(owner.id, "wechat")

    @blueprint.post("/api/oauth/wechat/bind")
    @require(ROLE_USER)
    @validate_request(BindBody)
    @document_response(Done)
    async def bind(data: BindBody, me: Principal) -> Response:
        openid = await guessed(data.code)
        if isinstance(openid, Response):
            return openid
        if await accounts.bound_user("wechat", openid) is not None:
            return fail("this WeChat account is already bound to a user")
        if not await accounts.bind(me.user.id, "wechat", openid):
            return fail("you have a WeChat account bound already: unbind it first")
        await accounts.record(me.user.id, "bound a WeChat account")
        return ok(message="WeChat account bound")

    return blueprint
