"""Management authentication as new-api: a login session (cookie) or the user's
access token, each with the ``New-Api-User`` header naming the same user."""

from __future__ import annotations

import pluggy

from faregate.db import models as m
from faregate.relay.context import AuthRequest, Principal
from faregate.security.crypto import key_hash

hookimpl = pluggy.HookimplMarker("faregate")


class SessionAuthenticator:
    kind = "session"

    def __init__(self) -> None:
        self.gateway = None

    def authenticate(self, req: AuthRequest) -> Principal | None:
        session = req.session
        if not session or "id" not in session:
            return None
        user = self.gateway.snapshot.users.get(session["id"])
        if user is None:
            return None
        return Principal(user=user, group=user.group, via="session")


class AccessTokenAuthenticator:
    kind = "access_token"

    def __init__(self) -> None:
        self.gateway = None

    async def authenticate(self, req: AuthRequest) -> Principal | None:
        value = req.headers.get("authorization", "").strip()
        if value[:7].lower() == "bearer ":
            value = value[7:].strip()
        if not value or value.startswith("sk-"):
            return None
        row = await m.User.get_or_none(access_token=key_hash(value))
        if row is None and len(value) <= 32:  # a clear token imported from a new-api database
            row = await m.User.get_or_none(access_token=value)
        if row is None:
            return None
        user = self.gateway.snapshot.users.get(row.id)
        if user is None:
            return None
        return Principal(user=user, group=user.group, via="access_token")


@hookimpl(trylast=True)
def register_authenticators(register):
    register(SessionAuthenticator())
    register(AccessTokenAuthenticator())
