"""API key ("token") authentication for the relay, from memory: status, expiry,
IP allow list, user status and group (new-api's TokenAuth)."""

from __future__ import annotations

import ipaddress
import time

import pluggy

from faregate.db import models as m
from faregate.errors import GatewayError
from faregate.relay.context import AuthRequest, Principal
from faregate.security.crypto import key_hash

hookimpl = pluggy.HookimplMarker("faregate")


class ApiKeyAuthenticator:
    kind = "api_key"

    def __init__(self) -> None:
        self.gateway = None  # bound at start (see Gateway.bind)

    def authenticate(self, req: AuthRequest) -> Principal | None:
        fmt = req.format
        key = fmt.api_key(req.headers, req.args) if fmt is not None else None
        if key is None:
            auth = req.headers.get("authorization", "")
            key = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        if not key:
            return None
        if key.startswith("sk-"):
            key = key[3:]
        key, _, pin = key.partition("-")
        snapshot = self.gateway.snapshot
        token = snapshot.tokens_by_hash.get(key_hash(key))
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
        user = snapshot.users.get(token.user_id)
        if user is None or user.status != m.USER_ENABLED:
            raise GatewayError(403, "the user is disabled", code="access_denied")
        group = token.group or user.group
        if group == "auto":  # new-api's auto group: fall back to the user's own group
            group = user.group
        elif token.group and token.group not in snapshot.options.group_ratio:
            raise GatewayError(403, f"group {token.group} is not available", code="access_denied")
        pinned = None
        if pin:
            if user.role < m.ROLE_ADMIN:
                raise GatewayError(403, "only administrators may pin a channel", code="access_denied")
            try:
                pinned = int(pin)
            except ValueError:
                raise GatewayError(401, "invalid API key", code="invalid_api_key") from None
        return Principal(user=user, token=token, group=group, pinned_channel=pinned, via="api_key")


@hookimpl(trylast=True)
def register_authenticators(register):
    register(ApiKeyAuthenticator())
