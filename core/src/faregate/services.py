"""What plugins may use of the running gateway: a narrow, typed door.

Every ``register_*`` hook that builds objects (and ``startup`` / ``shutdown``) may take
an argument ``services``: keep it on the objects you register. Lookups read the
in-memory snapshot (no database round trip) and work once the gateway has started.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from faregate.security.crypto import key_hash
from faregate.tokens import TokenEstimator, estimator

if TYPE_CHECKING:
    from faregate.contracts import PaymentProvider
    from faregate.default_plugins.options import GatewayOptions
    from faregate.gateway import Gateway
    from faregate.management.accounts_door import Accounts
    from faregate.principals import TokenEntry, UserEntry
    from faregate.settings import Settings
    from faregate.state.snapshot import ChannelEntry
    from faregate.upstream import UpstreamClient


@dataclass(slots=True, frozen=True)
class Balance:
    """Quota units: what is left and what was spent; a key may be ``unlimited`` and expire
    at ``expires`` (unix seconds, 0: never)."""

    remaining: int
    used: int
    unlimited: bool = False
    expires: int = 0


class Services:
    __slots__ = ("_accounts", "_gw", "estimator")

    def __init__(self, gateway: Gateway) -> None:
        self._gw = gateway
        self._accounts: Accounts | None = None
        #: the one token estimator (sizing prompts, counting tokens)
        self.estimator: TokenEstimator = estimator

    @property
    def settings(self) -> Settings:
        """Resolved ``FAREGATE_*`` settings, the plugins' own included."""
        return self._gw.settings

    @property
    def options(self) -> GatewayOptions:
        """The runtime options in force (new-api's options table), kept current: ``value(key)``
        reads any declared option (a plugin's too), the core's also as typed attributes."""
        return self._gw.snapshot.options

    @property
    def upstream(self) -> UpstreamClient:
        """The gateway's upstream client, for a channel's calls outside the relay (a cloud
        channel's token grant): the channel's proxy, the core's timeouts, and connections only
        to addresses the channel address policy allows."""
        return self._gw.upstream

    @property
    def accounts(self) -> Accounts:
        """Accounts and sign-in (:class:`faregate.api.Accounts`): make users, end a login
        (second factor, fresh session), revoke sessions, bind outside identities, keep
        one-time secrets, throttle guesses, seal secrets at rest."""
        if self._accounts is None:
            from faregate.management.accounts_door import Accounts

            self._accounts = Accounts(self._gw)
        return self._accounts

    # ---- who and what ---------------------------------------------------------------
    def user(self, user_id: int) -> UserEntry | None:
        return self._gw.snapshot.users.get(user_id)

    def user_by_name(self, username: str) -> UserEntry | None:
        return next((u for u in self._gw.snapshot.users.values() if u.username == username), None)

    def token_for_key(self, key: str) -> TokenEntry | None:
        """The API key entry for a key as clients send it, without ``sk-`` and channel pin."""
        return self._gw.snapshot.tokens_by_hash.get(key_hash(key))

    def channel(self, channel_id: int) -> ChannelEntry | None:
        return self._gw.snapshot.channels.get(channel_id)

    def payment_provider(self, name: str) -> PaymentProvider | None:
        return self._gw.payment_providers.get(name)

    async def balance(self, kind: str, ref_id: int) -> Balance | None:
        """A user's (``kind`` ``user``) or an API key's (``token``) quota as the database
        and every worker's leases have it now, read in one statement (a database read: not
        for the hot path)."""
        from faregate.billing.leases import row_with_held

        if kind == "user":
            user = await row_with_held("user", ref_id, "quota", "used_quota")
            return None if user is None else Balance(remaining=user["quota"] + user["held"], used=user["used_quota"])
        if kind == "token":
            token = await row_with_held("token", ref_id, "remain_quota", "used_quota", "unlimited_quota",
                                        "expired_time")
            if token is None:
                return None
            unlimited = bool(token["unlimited_quota"])
            return Balance(remaining=token["remain_quota"] + (0 if unlimited else token["held"]),
                           used=token["used_quota"], unlimited=unlimited, expires=max(0, token["expired_time"]))
        raise ValueError(f"kind must be user or token, not {kind!r}")

    # ---- doing ----------------------------------------------------------------------
    async def publish_change(self, kind: str, ref_id: int = 0) -> None:
        """After writing a user, key, channel or option row yourself: every worker on
        every host reloads it (``kind`` is ``user``, ``token``, ``channel``, ``option``)."""
        await self._gw.feed.publish(kind, ref_id)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run work that must outlive the request; awaited at shutdown."""
        return self._gw.spawn(coro)
