"""The core's default authenticators (their hooks: :mod:`.api_keys`, :mod:`.management_auth`),
apart from the hooks that register them: loading the plugins (every command does) imports
neither the models nor the sessions."""

from __future__ import annotations

import ipaddress
import time

from faregate.accounts.sessions import live_login
from faregate.billing.groups import AUTO
from faregate.contracts import AuthRequest
from faregate.db import models as m
from faregate.errors import GatewayError
from faregate.principals import Principal, bearer_token, split_api_key
from faregate.security.crypto import key_hash
from faregate.services import Services


class ApiKeyAuthenticator:
    kind = "api_key"

    def __init__(self, services: Services) -> None:
        self.services = services

    def authenticate(self, req: AuthRequest) -> Principal | None:
        key = req.api_key or bearer_token(req.headers)
        if not key:
            return None
        key, pin = split_api_key(key)
        services = self.services
        token = services.token_for_key(key)
        if token is None:
            raise GatewayError(401, "invalid API key", code="invalid_api_key")
        if token.status == m.TOKEN_EXHAUSTED:
            raise GatewayError(401, "this API key's quota is used up", code="invalid_api_key")
        if token.status == m.TOKEN_EXPIRED or (token.expired_time != -1 and token.expired_time < time.time()):
            raise GatewayError(401, "this API key has expired", code="invalid_api_key")
        if token.status != m.TOKEN_ENABLED:
            raise GatewayError(401, "this API key is disabled", code="invalid_api_key")
        if token.allow_ips is not None:
            try:
                ip = ipaddress.ip_address(req.remote_addr)
            except ValueError:
                ip = None
            if ip is None or not any(ip in net for net in token.allow_ips):
                raise GatewayError(403, "this IP address may not use this API key", code="access_denied")
        user = services.user(token.user_id)
        if user is None or user.status != m.USER_ENABLED:
            raise GatewayError(403, "the user is disabled", code="access_denied")
        group = token.group or user.group
        # checked per request too: the group may have been removed, or the user moved, since
        if token.group and token.group not in services.options.usable_groups(user.group):
            raise GatewayError(403, f"group {token.group} is no longer usable by this key's user",
                               code="access_denied")
        auto: tuple[str, ...] = ()
        if group == AUTO:  # new-api's auto group: the AutoGroups the user may use, in order
            auto = tuple(services.options.user_auto_groups(user.group))
            group = auto[0] if auto else user.group  # admission picks the one serving the model
        pinned = None
        if pin:
            if user.role < m.ROLE_ADMIN:
                raise GatewayError(403, "only administrators may pin a channel", code="access_denied")
            try:
                pinned = int(pin)
            except ValueError:
                raise GatewayError(401, "invalid API key", code="invalid_api_key") from None
        return Principal(user=user, token=token, group=group, pinned_channel=pinned, via="api_key",
                         auto_groups=auto)


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
