"""Who is calling: the principal an authenticator finds, the user and API key rows it
names (as the snapshot holds them), and the readers of a presented key. Plain values: the
authenticator contract that finds them is :mod:`faregate.contracts.identity`."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The value of ``Authorization: Bearer <value>``, stripped; None when absent. The
    one reader of that header (API keys, access tokens)."""
    auth = headers.get("authorization") or ""
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return None


def split_api_key(presented: str) -> tuple[str, str]:
    """``sk-<key>[-<channel id>]`` as clients send it: ``(key, pin)``, the stored key
    (without ``sk-``) and the pinned channel id (``""`` when none). The one reader of that form."""
    key, _, pin = presented.removeprefix("sk-").partition("-")
    return key, pin


@dataclass(slots=True)
class TokenEntry:
    id: int
    user_id: int
    key_hash: str
    name: str
    status: int
    expired_time: int
    unlimited: bool
    model_limits: frozenset[str] | None
    allow_ips: list[ipaddress.IPv4Network | ipaddress.IPv6Network] | None
    group: str
    #: the key's own rate limits (0: none of its own; faregate.limits)
    rpm_limit: int = 0
    tpm_limit: int = 0
    max_parallel_requests: int = 0


@dataclass(slots=True)
class UserEntry:
    id: int
    username: str
    role: int
    status: int
    group: str
    #: a login session carrying another number was revoked (users.session_version)
    session_version: int = 0
    #: the markers of the user's logged-out sessions (faregate.accounts.sessions.ended_marker)
    ended_sessions: frozenset[str] = frozenset()


@dataclass(slots=True)
class Principal:
    user: UserEntry
    token: TokenEntry | None = None
    group: str = "default"
    pinned_channel: int | None = None
    via: str = "api_key"  # api_key | session | access_token
    #: a key of group ``auto``: the groups it may use, in order (``AutoGroups`` the user may
    #: use); admission settles ``group`` on the first that serves the request's model
    auto_groups: tuple[str, ...] = ()
