"""Who is calling: the principal an authenticator finds, and what it looks at."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faregate.contracts import InboundFormat
    from faregate.state.snapshot import TokenEntry, UserEntry


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
class AuthRequest:
    """What an authenticator may look at."""

    headers: Mapping[str, str]
    args: Mapping[str, str]
    remote_addr: str
    format: InboundFormat | None = None
    cookies: Mapping[str, str] = field(default_factory=dict)
    session: Any = None
    #: the key as the request's format carries it (None when it carries none)
    api_key: str | None = None


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
