"""API key ("token") authentication for the relay, from memory (the snapshot, no
database round trip), as new-api's TokenAuth: the key where the request's format
carries it (else ``Authorization: Bearer``), an optional ``sk-`` prefix and, for
administrators, a ``-<channel id>`` suffix pinning a channel; then the key's status,
expiry and IP allow list, the user's status and the group. A present key it does not
know or may not use is refused (401/403), not passed on; registered ``trylast``, it
runs after the authenticators plugins add."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable

from faregate import hookimpl
from faregate.billing.groups import AUTO
from faregate.contracts import Authenticator, AuthRequest
from faregate.db import models as m
from faregate.errors import GatewayError
from faregate.principals import Principal, bearer_token, split_api_key
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


@hookimpl(trylast=True)
def register_authenticators(register: Callable[[Authenticator], None], services: Services) -> None:
    register(ApiKeyAuthenticator(services))
