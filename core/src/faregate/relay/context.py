"""Per-request state passed to policy objects (rewriters, filters, selectors,
pricers, quota checks)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from faregate.billing.ledger import Reservation
from faregate.billing.pricing import Price
from faregate.canonical import ChatRequest
from faregate.contracts import InboundFormat, RequestSummary
from faregate.state.snapshot import ChannelEntry, TokenEntry, UserEntry


@dataclass(slots=True)
class AuthRequest:
    """What an authenticator may look at."""

    headers: Mapping[str, str]
    args: Mapping[str, str]
    remote_addr: str
    format: InboundFormat | None = None
    cookies: Mapping[str, str] = field(default_factory=dict)
    session: Any = None


@dataclass(slots=True)
class Principal:
    user: UserEntry
    token: TokenEntry | None = None
    group: str = "default"
    pinned_channel: int | None = None
    via: str = "api_key"  # api_key | session | access_token


@dataclass(slots=True)
class RelayContext:
    request_id: str
    format: InboundFormat
    path: str
    body: dict[str, Any]
    raw: bytes
    summary: RequestSummary
    principal: Principal
    client_ip: str
    headers: Mapping[str, str]
    started: float
    price: Price | None = None
    reservation: Reservation | None = None
    channel: ChannelEntry | None = None
    upstream_model: str = ""
    attempt: int = 0
    tried: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    _canonical: ChatRequest | None = None

    @property
    def model(self) -> str:
        return self.summary.model

    def canonical(self) -> ChatRequest:
        """The request in the canonical model, parsed on first use (same-format
        requests never need it)."""
        if self._canonical is None:
            self._canonical = self.format.parse(self.body)
        return self._canonical

    def set_canonical(self, request: ChatRequest) -> None:
        self._canonical = request
