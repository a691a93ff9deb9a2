"""Management authentication as new-api: a login session (cookie) or the user's
access token, each with the ``New-Api-User`` header naming the same user."""

from __future__ import annotations

from collections.abc import Callable

from faregate import hookimpl
from faregate.accounts.sessions import live_login
from faregate.contracts import Authenticator, AuthRequest
from faregate.db import models as m
from faregate.principals import Principal, bearer_token
from faregate.security.crypto import key_hash
from faregate.services import Services


class SessionAuthenticator:
    kind = "session"

    def __init__(self, services: Services) -> None:
        self.services = services

    def authenticate(self, req: AuthRequest) -> Principal | None:
        session = req.session
        if not session or "id" not in session:
            return None
        user = self.services.user(session["id"])
        # a session from before a password change (or a role change, a removed second
        # factor) carries an older version, a logged-out one an ended sid: revoked, on every
        # worker, with no database read
        if user is None or not live_login(user, session):
            return None
        return Principal(user=user, group=user.group, via="session")


class AccessTokenAuthenticator:
    kind = "access_token"

    def __init__(self, services: Services) -> None:
        self.services = services

    async def authenticate(self, req: AuthRequest) -> Principal | None:
        # new-api also takes the token without the "Bearer " prefix
        value = bearer_token(req.headers) or (req.headers.get("authorization") or "").strip()
        if not value or value.startswith("sk-"):
            return None
        row = await m.User.get_or_none(access_token=key_hash(value))
        if row is None and len(value) <= 32:  # a clear token imported from a new-api database
            row = await m.User.get_or_none(access_token=value)
        if row is None:
            return None
        user = self.services.user(row.id)
        if user is None:
            return None
        return Principal(user=user, group=user.group, via="access_token")


@hookimpl(trylast=True)
def register_authenticators(register: Callable[[Authenticator], None], services: Services) -> None:
    register(SessionAuthenticator(services))
    register(AccessTokenAuthenticator(services))
