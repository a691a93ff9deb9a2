"""Known devices (OWASP's device cookies): a browser that finished a login of a user keeps a
signed cookie naming that user. While the user's account is locked by failed logins from
many addresses (the login throttle's account-wide limit), a password login from such a
browser is still checked as usual, within a failure budget of the device's own; any other
client gets the lock's second step. So guessers spread over many addresses cannot lock the
owner out of the browsers they use.

The cookie is ``faregate_device``: ``{"d": a random device id, "u": [user ids]}`` signed
with the session secret (itsdangerous), sent only to ``/api/user/login`` (HttpOnly,
SameSite=Lax, Secure with ``FAREGATE_SECURE_COOKIES``), good for :data:`MAX_AGE` from the
last login on it. It proves nothing on its own: a password (and a second factor where one
is set up) is still needed."""

from __future__ import annotations

import secrets
from typing import Any

from itsdangerous import BadData, URLSafeTimedSerializer
from quart import Response, after_this_request, current_app, request
from werkzeug.wrappers import Response as WerkzeugResponse

COOKIE = "faregate_device"
#: the cookie goes to the login routes only (``/api/user/login`` and its second step)
COOKIE_PATH = "/api/user/login"
MAX_AGE = 180 * 24 * 3600
#: users remembered by one browser (the latest logins)
MAX_USERS = 8
_SALT = "faregate.known-device"
_COOKIE_MAX = 1024


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.secret_key, salt=_SALT)  # type: ignore[arg-type]


def _read() -> tuple[str, list[int]]:
    """This request's device id and the users it signed in, or ``("", [])``."""
    raw = request.cookies.get(COOKIE, "")
    if not raw or len(raw) > _COOKIE_MAX:
        return "", []
    try:
        data: Any = _serializer().loads(raw, max_age=MAX_AGE)
    except BadData:
        return "", []
    device, users = (data.get("d"), data.get("u")) if isinstance(data, dict) else (None, None)
    if not isinstance(device, str) or not device or not isinstance(users, list):
        return "", []
    return device, [u for u in users if isinstance(u, int) and not isinstance(u, bool)][:MAX_USERS]


def known_device(user_id: int) -> str:
    """The device id when this request comes from a browser that signed in ``user_id``
    before, else ``""``. Call it inside a request."""
    device, users = _read()
    return device if user_id in users else ""


def remember_device(user_id: int) -> None:
    """Mark this browser as a known device of ``user_id``: the answer of the current request
    sets the cookie, whatever answer the route ends up returning (an OAuth redirect too)."""
    device, users = _read()
    value = _serializer().dumps({"d": device or secrets.token_urlsafe(16),
                                 "u": [user_id, *(u for u in users if u != user_id)][:MAX_USERS]})
    secure = bool(current_app.config.get("SESSION_COOKIE_SECURE"))

    @after_this_request
    async def _set_cookie(response: Response | WerkzeugResponse) -> Response | WerkzeugResponse:
        response.set_cookie(COOKIE, value, max_age=MAX_AGE, path=COOKIE_PATH, secure=secure, httponly=True,
                            samesite="Lax")
        return response
