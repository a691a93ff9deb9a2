"""new-api's routes of sign-in methods that are plugins here (TOTP, passkeys, email, OAuth,
Telegram, WeChat), and the few these plugins add (the Telegram binding's state): when the
plugin is not installed, its routes still answer, in the envelope, naming the plugin to
install, instead of a bare 404 that looks like a typo.

Installed after the plugins' blueprints, and only for the paths none of them serves; the
plugins so stood in for are kept on the app (:func:`absent`), for what ``GET /api/status``
says can work (email verification needs the email plugin's code sender)."""

from __future__ import annotations

import re
from typing import Any

from quart import Quart, Response

from faregate.management.common import fail, public

#: (plugin, what it does, [(method, path)]) in new-api's paths
METHODS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("faregate-auth-totp", "two-factor authentication (2FA)", (
        ("GET", "/api/user/2fa/status"), ("POST", "/api/user/2fa/setup"), ("POST", "/api/user/2fa/enable"),
        ("POST", "/api/user/2fa/disable"), ("POST", "/api/user/2fa/backup_codes"), ("GET", "/api/user/2fa/stats"))),
    ("faregate-auth-passkeys", "passkey login", (
        ("GET", "/api/user/passkey"), ("DELETE", "/api/user/passkey"),
        ("POST", "/api/user/passkey/register/begin"), ("POST", "/api/user/passkey/register/finish"),
        ("POST", "/api/user/passkey/verify/begin"), ("POST", "/api/user/passkey/verify/finish"),
        ("POST", "/api/user/passkey/login/begin"), ("POST", "/api/user/passkey/login/finish"))),
    ("faregate-auth-email", "email verification and password reset", (
        ("GET", "/api/verification"), ("GET", "/api/reset_password"), ("POST", "/api/user/reset"),
        ("POST", "/api/oauth/email/bind"))),
    ("faregate-auth-oauth", "OAuth login (GitHub, Discord, LinuxDO, OIDC)", (
        ("GET", "/api/oauth/state"), ("GET", "/api/oauth/<provider>"))),
    ("faregate-auth-telegram", "Telegram login", (
        ("GET", "/api/oauth/telegram/login"), ("GET", "/api/oauth/telegram/bind"),
        ("GET", "/api/oauth/telegram/state"))),
    ("faregate-auth-wechat", "WeChat login", (
        ("GET", "/api/oauth/wechat"), ("POST", "/api/oauth/wechat/bind"))),
)

_PARAM = re.compile(r"<[^>]*>")
#: where :func:`install` leaves the plugins it stood in for (``app.extensions``)
ABSENT = "faregate.absent_sign_in_plugins"


def _shape(rule: str) -> str:
    return _PARAM.sub("<>", rule)


def _answer(plugin: str, what: str) -> Any:
    async def view(**_: Any) -> Response:
        return fail(f"{what} is not available: the {plugin} plugin is not installed")

    view.__name__ = "missing_" + re.sub(r"\W", "_", plugin)
    return public(view)


def install(app: Quart) -> None:
    served = {(method, _shape(rule.rule)) for rule in app.url_map.iter_rules() for method in rule.methods or ()}
    missing: set[str] = set()
    for plugin, what, routes in METHODS:
        view = _answer(plugin, what)
        for method, path in routes:
            if (method, _shape(path)) not in served:
                endpoint = f"{view.__name__}_{method}_{path}".replace("/", "_")
                app.add_url_rule(path, endpoint, view, methods=[method])
                missing.add(plugin)
    app.extensions[ABSENT] = frozenset(missing)


def absent(app: Quart) -> frozenset[str]:
    """The sign-in plugins some of whose new-api routes no installed plugin serves."""
    found: frozenset[str] = app.extensions.get(ABSENT, frozenset())
    return found
