"""What the edge (HTTP or WebSocket) hands an endpoint, and what it gets back. Neither
knows a web framework: the edge in :mod:`faregate.edge` translates."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from faregate.contracts.values import Route
    from faregate.errors import GatewayError

JSON = "application/json"


class WebSocketPeer(Protocol):
    """The client end of a WebSocket route (None before the edge upgrades)."""

    async def accept(self, subprotocol: str | None = None) -> None: ...

    async def receive(self) -> str | bytes: ...

    async def send(self, data: str | bytes) -> None: ...

    async def close(self, code: int = 1000, reason: str = "") -> None: ...


@dataclass(slots=True)
class InboundRequest:
    """One client request as the edge received it. The body is read on demand
    (``await read_body()``), so a driver can refuse a caller before reading it."""

    method: str
    path: str
    route: Route
    path_params: Mapping[str, str]
    query: Mapping[str, str]
    headers: Mapping[str, str]
    client_ip: str
    read_body: Callable[[], Awaitable[bytes]]
    #: the login session, only on a route for it (:attr:`Route.login_session`): then admission
    #: authenticates by it alone; None on every other route
    session: Any = None
    cookies: Mapping[str, str] = field(default_factory=dict)
    websocket: WebSocketPeer | None = None
    #: subprotocols a WebSocket client offered
    subprotocols: tuple[str, ...] = ()
    #: True once the whole body has arrived (``read_body`` will not wait): then no body
    #: timeout is armed for it; None where the edge cannot tell
    body_arrived: Callable[[], bool] | None = None


class LastChunk(bytes):
    """A stream's last bytes, marked so when they are yielded (the stream ends right after,
    awaiting nothing more): the edge sends them with the body's end, one message and one
    socket write where an unmarked last chunk and the end take two. Plain bytes to anything
    that does not look (Quart's response sends them, then the end)."""

    __slots__ = ()


@dataclass(slots=True)
class Outcome:
    """What an endpoint answers: a whole ``body``, or a ``stream`` of byte chunks sent as
    they come (its last may be a :class:`LastChunk`). ``error`` keeps the error an error
    outcome was rendered from."""

    status: int = 200
    body: bytes = b""
    content_type: str = JSON
    headers: dict[str, str] = field(default_factory=dict)
    stream: AsyncIterator[bytes] | None = None
    error: GatewayError | None = None
