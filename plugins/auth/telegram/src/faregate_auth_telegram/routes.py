"""new-api's Telegram routes: the login widget's callback logs in the account bound to the
Telegram user (new-api makes no account here: bind one first); the binding route, for a
logged-in user, binds and sends the browser back to the console (a fixed path).

The widget reaches the binding by a plain redirect, which carries the session cookie but no
``New-Api-User`` header, so the route takes the session alone (as new-api) and, against a
link from another site binding the attacker's Telegram to the visitor's account, wants a
state it gave this user (``GET /api/oauth/telegram/state``, put in the widget's auth URL), or
the header from a script. Widget data is a bearer proof: each signed set is claimed once, in
one atomic write, so of two racing replays one wins."""

from __future__ import annotations

from quart import Blueprint, Response, request
from quart_schema import document_response

from faregate.api import (
    ROLE_USER,
    BadInput,
    Done,
    Ok,
    Principal,
    Services,
    fail,
    guarded,
    ok,
    public,
    require,
    require_session,
)
from faregate_auth_telegram.widget import WidgetRefused, check

#: used widget data, kept for as long as it could be replayed
USED = "telegram_login"
#: states for the binding's auth URL, and how long one lives
BIND_STATE, STATE_TTL = "telegram_bind", 600
#: where the binding sends the browser (new-api's console page)
AFTER_BIND = "/console/personal"


def make_blueprint(services: Services) -> Blueprint:
    blueprint = Blueprint("auth_telegram", __name__)
    accounts = services.accounts

    async def telegram_id() -> str:
        options = services.options
        if not options.value("TelegramOAuthEnabled"):
            raise WidgetRefused("Telegram login is not enabled by the administrator")
        fields = {k: v for k, v in request.args.items() if k != "state"}  # the state is ours, not Telegram's
        max_age = int(services.settings.get("telegram_login_max_age", 3600))
        user_id = check(fields, str(options.value("TelegramBotToken")), max_age=max_age)
        if not await accounts.claim_once(USED, fields["hash"], ttl=max_age + 60):
            raise WidgetRefused("this Telegram login was used already: log in with Telegram again")
        return user_id

    async def own_request(me: Principal) -> bool:
        """This user's browser asked for the binding: the state given to this user, or the
        ``New-Api-User`` header (no other site can make a browser send it)."""
        if request.headers.get("New-Api-User", "").strip() == str(me.user.id):
            return True
        state = request.args.get("state", "")
        if not state or len(state) > 128:
            return False
        found = await accounts.take_secret(BIND_STATE, state)
        return found is not None and found.user_id == me.user.id

    @blueprint.errorhandler(WidgetRefused)
    async def _refused(exc: WidgetRefused) -> Response:
        return fail(str(exc))

    @blueprint.get("/api/oauth/telegram/login")
    @public
    @guarded
    async def login() -> Response:
        subject = await telegram_id()
        owner = await accounts.bound_user("telegram", subject)
        if owner is None:
            return fail("no account is bound to this Telegram account: log in another way and bind it first")
        return await accounts.log_in(owner.id, "telegram")

    @blueprint.get("/api/oauth/telegram/state")
    @require(ROLE_USER)
    @document_response(Ok[str])
    async def bind_state(me: Principal) -> Response:
        """A state for the binding: the widget's auth URL is
        ``/api/oauth/telegram/bind?state=<it>`` (used once, within ten minutes)."""
        return ok(await accounts.issue_secret(BIND_STATE, ttl=STATE_TTL, user_id=me.user.id))

    @blueprint.get("/api/oauth/telegram/bind")
    @require_session(ROLE_USER)
    @document_response(Done)
    async def bind(me: Principal) -> Response:
        if not await own_request(me):
            raise BadInput("the binding needs the state from GET /api/oauth/telegram/state in the widget's auth URL"
                           ": start the binding again", status=403)
        subject = await telegram_id()
        if await accounts.bound_user("telegram", subject) is not None:
            return fail("this Telegram account is already bound to a user")
        if not await accounts.bind(me.user.id, "telegram", subject):
            return fail("you have a Telegram account bound already: unbind it first")
        await accounts.record(me.user.id, "bound a Telegram account")
        return Response("", status=302, headers={"Location": AFTER_BIND, "Cache-Control": "no-store"})

    return blueprint
