"""new-api's Telegram routes: the login widget's callback logs in the account bound to the
Telegram user (new-api makes no account here: bind one first); the binding route, for a
logged-in user, binds and sends the browser back to the console (a fixed path)."""

from __future__ import annotations

from quart import Blueprint, Response, request
from quart_schema import document_response

from faregate.api import ROLE_USER, Done, Principal, Services, fail, guarded, public, require
from faregate_auth_telegram.widget import WidgetRefused, check

#: used widget data, kept for as long as it could be replayed
USED = "telegram_login"
#: where the binding sends the browser (new-api's console page)
AFTER_BIND = "/console/personal"


def make_blueprint(services: Services) -> Blueprint:
    blueprint = Blueprint("auth_telegram", __name__)
    accounts = services.accounts

    async def telegram_id() -> str:
        options = services.options
        if not options.value("TelegramOAuthEnabled"):
            raise WidgetRefused("Telegram login is not enabled by the administrator")
        fields = {k: v for k, v in request.args.items()}
        max_age = int(services.settings.get("telegram_login_max_age", 3600))
        user_id = check(fields, str(options.value("TelegramBotToken")), max_age=max_age)
        # widget data is a bearer proof: each one is taken once
        replayed = await accounts.take_secret(USED, fields["hash"]) is not None
        await accounts.issue_secret(USED, ttl=max_age + 60, secret=fields["hash"])  # (still) used
        if replayed:
            raise WidgetRefused("this Telegram login was used already: log in with Telegram again")
        return user_id

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

    @blueprint.get("/api/oauth/telegram/bind")
    @require(ROLE_USER)
    @document_response(Done)
    async def bind(me: Principal) -> Response:
        subject = await telegram_id()
        if await accounts.bound_user("telegram", subject) is not None:
            return fail("this Telegram account is already bound to a user")
        if not await accounts.bind(me.user.id, "telegram", subject):
            return fail("you have a Telegram account bound already: unbind it first")
        await accounts.record(me.user.id, "bound a Telegram account")
        return Response("", status=302, headers={"Location": AFTER_BIND, "Cache-Control": "no-store"})

    return blueprint
