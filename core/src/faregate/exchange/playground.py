"""The ``playground`` endpoint kind: new-api's ``POST /pg/chat/completions``, the console's
chat page. The caller is the logged-in user, not an API key: the route asks for the login
session (``Route.options`` ``{"auth": "session"}``; admission then takes nothing else).
The body's optional ``group`` picks one of the user's usable groups (their own by
default) and is removed before the request goes anywhere. As new-api, the request is made
by a key that exists only in memory, ``playground-<group>`` (id 0, unlimited: the user's
wallet pays and the consume log names it). From there it is a chat request like any
other: channel selection, conversion, retries, billing, logs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from faregate import jsonutil
from faregate.billing.groups import AUTO
from faregate.db import models as m
from faregate.errors import GatewayError, bad_request
from faregate.exchange.chat import ChatDriver
from faregate.principals import TokenEntry

if TYPE_CHECKING:
    from faregate.contracts.inbound import Outcome
    from faregate.exchange.exchange import Exchange
    from faregate.principals import Principal

PLAYGROUND = "playground"
GROUP_FIELD = "group"


class PlaygroundDriver(ChatDriver):
    """Routes of kind ``playground``: the logged-in user's chat requests, relayed as chat."""

    def __init__(self) -> None:
        super().__init__(PLAYGROUND)

    async def handle(self, ex: Exchange) -> Outcome:
        principal = await ex.authenticate()
        if principal.via != "session":  # a route declared without {"auth": "session"}: fail closed
            raise GatewayError(401, "this endpoint takes the login session, not an API key", code="unauthorized")
        raw, body = await ex.read_json()
        if GROUP_FIELD in body:
            use_group(ex, principal, body.pop(GROUP_FIELD))
            # not OpenAI's: a same-format channel gets the bytes, so they are written again without it
            raw = jsonutil.dumps(body)
        else:
            use_group(ex, principal, None)
        return await self.relay_json(ex, raw, body)


def use_group(ex: Exchange, principal: Principal, requested: Any) -> None:
    """Make ``principal`` the playground's key in the group asked for (None or empty: the
    user's own); 403 for a group the user may not use (what ``/api/user/self/groups``
    lists), ``auto`` choosing among its groups per model as an ``auto`` key does."""
    user = principal.user
    if requested is not None and not isinstance(requested, str):
        raise bad_request("group must be a string", param=GROUP_FIELD)
    group = requested or user.group
    options = ex.options
    if group != user.group and group not in options.usable_groups(user.group):
        raise GatewayError(403, f"group {group} is not usable by this user", code="access_denied")
    principal.group = group
    if group == AUTO:
        principal.auto_groups = tuple(options.user_auto_groups(user.group))
        principal.group = principal.auto_groups[0] if principal.auto_groups else user.group
    principal.token = TokenEntry(id=0, user_id=user.id, key_hash="", name=f"playground-{group}",
                                 status=m.TOKEN_ENABLED, expired_time=-1, unlimited=True, model_limits=None,
                                 allow_ips=None, group=group)
