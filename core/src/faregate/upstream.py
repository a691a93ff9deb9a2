"""The one HTTP client the relay uses for upstreams, owned by the core: aiohttp's
connection pool with the core's timeouts, every connection to an address the channel
address policy allows, checked when it is made (:mod:`faregate.net.connector`).

Not httpx on this path: measured here, httpx (even over an aiohttp transport) cost
~0.3 ms of CPU per request, a third of the gateway's budget (docs/benchmarks.md), and
its client keeps upstream cookies across tenants. httpx stays for everything off the
hot path (tests, admin tools).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping

import aiohttp
from python_socks import ProxyError

from faregate import __version__
from faregate.awaitables import time_limit
from faregate.contracts import UpstreamRequest
from faregate.net.addresses import PRIVATE_CATEGORIES
from faregate.net.connector import CheckedResolver, CheckedSocksConnector, checked_socket_factory, refused_in
from faregate.net.proxy import is_socks
from faregate.net.resolve import AddressPolicy

USER_AGENT = f"faregate/{__version__}"
#: the largest message an upstream WebSocket may send (a realtime session's biggest events,
#: ``response.done`` with its transcripts, stay far below); beyond it the session fails
WS_MAX_MESSAGE = 32 * 1024 * 1024
#: seconds to wait for an upstream's answer to our close frame
WS_CLOSE_TIMEOUT = 5.0
#: socks proxies with a session (and connection pool) of their own at once
MAX_SOCKS_SESSIONS = 64


class UpstreamTransportError(Exception):
    """The upstream could not be reached or the connection broke. ``eof`` is True when
    the upstream closed the connection in the middle of a body."""

    def __init__(self, message: str, *, eof: bool = False, timeout: bool = False) -> None:
        super().__init__(message)
        self.eof = eof
        self.timeout = timeout


class UpstreamAddressRefused(UpstreamTransportError):
    """No connection was made: the upstream's host (or the channel proxy's) is, or resolves
    to, an address the channel address policy refuses. The message names the host and the
    category, never the address a name resolved to."""


def _wrap(exc: BaseException) -> UpstreamTransportError:
    refused = refused_in(exc)
    if refused is not None:
        return UpstreamAddressRefused(str(refused))
    if isinstance(exc, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError):
        return UpstreamTransportError(type(exc).__name__, eof=True)
    if isinstance(exc, TimeoutError):
        return UpstreamTransportError("timeout", timeout=True)
    return UpstreamTransportError(type(exc).__name__)


class UpstreamResponse:
    """A thin view of an aiohttp response: status, headers, and the body read whole or
    as it arrives."""

    __slots__ = ("_resp",)

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp

    @property
    def status_code(self) -> int:
        return self._resp.status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._resp.headers

    async def aread(self, limit: int | None = None) -> bytes:
        try:
            if limit is None:
                return await self._resp.read()
            return await self._resp.content.read(limit)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise _wrap(exc) from exc

    async def read_chunk(self) -> bytes:
        """The next bytes of the body as they arrive; ``b""`` at its end. A cancelled
        call loses nothing: what arrives meanwhile stays buffered for the next call."""
        content = self._resp.content
        try:
            chunk = await content.readany()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise _wrap(exc) from exc
        if not chunk and not self._resp.closed:
            failure = content.exception()
            if failure is not None:
                raise _wrap(failure)
        return chunk

    def chunk_now(self) -> bytes | None:
        """The body's bytes that have arrived, without waiting: ``b""`` at its end, None when
        nothing is there yet (then :meth:`read_chunk` waits, under a timeout of the caller's)."""
        content = self._resp.content
        try:
            chunk = content.read_nowait()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise _wrap(exc) from exc
        if chunk:
            return chunk
        if not content.at_eof():
            return None
        if not self._resp.closed:
            failure = content.exception()
            if failure is not None:
                raise _wrap(failure)
        return b""

    async def aclose(self) -> None:
        self._resp.release()

    def release(self) -> bool:
        """Close at once, when that needs no await (an HTTP response: its connection goes
        back to the pool); False when :meth:`aclose` must be awaited instead."""
        self._resp.release()
        return True


class UpstreamWebSocket:
    """A connected upstream WebSocket: whole messages in and out, transport failures as
    :class:`UpstreamTransportError`. Pings are answered by aiohttp."""

    __slots__ = ("_ws",)

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws

    @property
    def close_code(self) -> int | None:
        """How the upstream closed (None while open, or when the connection just dropped)."""
        return self._ws.close_code

    async def receive(self) -> str | bytes | None:
        """The next message; None once the connection is closed. A broken connection or
        an oversized message raises."""
        try:
            msg = await self._ws.receive()
        except (aiohttp.ClientError, OSError) as exc:
            raise _wrap(exc) from exc
        if msg.type is aiohttp.WSMsgType.TEXT:
            text: str = msg.data
            return text
        if msg.type is aiohttp.WSMsgType.BINARY:
            data: bytes = msg.data
            return data
        if msg.type is aiohttp.WSMsgType.ERROR:
            raise UpstreamTransportError(type(msg.data).__name__, eof=True)
        return None  # CLOSE / CLOSING / CLOSED

    async def send(self, data: str | bytes) -> None:
        try:
            if isinstance(data, str):
                await self._ws.send_str(data)
            else:
                await self._ws.send_bytes(data)
        except (aiohttp.ClientError, OSError) as exc:
            raise _wrap(exc) from exc

    async def close(self, code: int = 1000) -> None:
        """Close (waiting at most :data:`WS_CLOSE_TIMEOUT` for the upstream's answer); never raises."""
        try:
            await self._ws.close(code=code)
        except (aiohttp.ClientError, OSError, TimeoutError):
            pass


class WebSocketHandshake(UpstreamResponse):
    """An upstream's answer to a WebSocket upgrade: 101 with the connected
    :attr:`websocket`, or the status it refused the upgrade with (aiohttp keeps no body
    of a refusal: reading it gives ``b""``)."""

    __slots__ = ("_headers", "_status", "websocket")

    def __init__(self, status: int, headers: Mapping[str, str], websocket: UpstreamWebSocket | None = None) -> None:
        # no aiohttp response behind it: every member of the base is overridden
        self._status = status
        self._headers = headers
        self.websocket = websocket

    @property
    def status_code(self) -> int:
        return self._status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._headers

    async def aread(self, limit: int | None = None) -> bytes:
        return b""

    async def read_chunk(self) -> bytes:
        return b""

    def chunk_now(self) -> bytes | None:
        return b""

    async def aclose(self) -> None:
        if self.websocket is not None:
            await self.websocket.close()

    def release(self) -> bool:
        return self.websocket is None  # a socket's close handshake is awaited


class UpstreamClient:
    """One pooled session for direct calls and http(s) proxies (aiohttp's ``proxy=``); a
    socks proxy needs a connector of its own, so each socks URL gets a session of its own
    (at most :data:`MAX_SOCKS_SESSIONS`, the least recently used closed first). Every
    connection, to an upstream or to a proxy, goes to an address ``addresses`` allows
    (default: the channel policy's ``allow``), checked when the connection is made."""

    def __init__(self, *, connect_timeout: float, first_byte_timeout: float,
                 max_connections: int = 1000, addresses: AddressPolicy | None = None) -> None:
        self._connect = connect_timeout
        self._first_byte = first_byte_timeout
        self._max = max_connections
        self.addresses = addresses or AddressPolicy(PRIVATE_CATEGORIES)
        self._session: aiohttp.ClientSession | None = None
        self._socks: OrderedDict[str, aiohttp.ClientSession] = OrderedDict()

    def _new_session(self, connector: aiohttp.BaseConnector) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect),
            cookie_jar=aiohttp.DummyCookieJar(),  # never carry one tenant's cookies to the next
            auto_decompress=True,
        )

    async def start(self) -> None:
        self._session = self._new_session(aiohttp.TCPConnector(
            limit=self._max, limit_per_host=0, keepalive_timeout=60,
            resolver=CheckedResolver(self.addresses, timeout=self._connect),
            socket_factory=checked_socket_factory(self.addresses)))

    async def stop(self) -> None:
        sessions = [*self._socks.values(), self._session]
        self._socks.clear()
        for session in sessions:
            if session is not None and not session.closed:
                await session.close()

    def _route(self, proxy: str) -> tuple[aiohttp.ClientSession, str | None]:
        """The session and ``proxy=`` argument for a call through ``proxy`` ("" direct)."""
        assert self._session is not None, "UpstreamClient.start() was not awaited"
        if not proxy:
            return self._session, None
        if not is_socks(proxy):
            return self._session, proxy
        session = self._socks.get(proxy)
        if session is None or session.closed:
            session = self._socks[proxy] = self._new_session(CheckedSocksConnector.from_url(
                proxy, policy=self.addresses, resolve_timeout=self._connect, rdns=True, limit=self._max,
                limit_per_host=0, keepalive_timeout=60))
            while len(self._socks) > MAX_SOCKS_SESSIONS:
                _, evicted = self._socks.popitem(last=False)
                asyncio.get_running_loop().create_task(evicted.close())
        self._socks.move_to_end(proxy)
        return session, None

    def _wait(self, timeout: float | None) -> float:
        return self._first_byte if timeout is None else max(0.0, min(self._first_byte, timeout))

    async def send(self, req: UpstreamRequest, *, stream: bool = False, proxy: str = "",
                   timeout: float | None = None) -> UpstreamResponse:
        """Send and wait for the response headers (``first_byte_timeout``, or ``timeout``
        when shorter); the body is read by the caller. ``proxy``: the channel's proxy URL."""
        session, via = self._route(proxy)
        # our own User-Agent rather than skip_auto_headers, which sends aiohttp down a slow path
        req.headers.setdefault("User-Agent", USER_AGENT)
        try:
            with time_limit(self._wait(timeout)):
                resp = await session.request(req.method, req.url, headers=req.headers, data=req.body,
                                             allow_redirects=False, proxy=via)
        except (aiohttp.ClientError, OSError, TimeoutError, ProxyError) as exc:
            raise _wrap(exc) from exc
        return UpstreamResponse(resp)

    async def websocket(self, req: UpstreamRequest, *, proxy: str = "",
                        timeout: float | None = None) -> WebSocketHandshake:
        """Open a WebSocket to ``req.url`` with ``req.headers`` (within ``first_byte_timeout``),
        through the same pool: a handshake of status 101 with its connection, or the status
        the upstream refused the upgrade with. No compression is offered (no inflating of
        what an upstream sends beyond :data:`WS_MAX_MESSAGE`)."""
        session, via = self._route(proxy)
        req.headers.setdefault("User-Agent", USER_AGENT)
        try:
            with time_limit(self._wait(timeout)):
                ws = await session.ws_connect(
                    req.url, headers=req.headers, max_msg_size=WS_MAX_MESSAGE, compress=0, autoping=True,
                    timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=WS_CLOSE_TIMEOUT), proxy=via)
        except aiohttp.WSServerHandshakeError as exc:
            if exc.status is None or exc.status == 101:  # upgraded, but not a WebSocket we can speak
                raise UpstreamTransportError("bad WebSocket handshake") from exc
            return WebSocketHandshake(exc.status, exc.headers or {})
        except (aiohttp.ClientError, OSError, TimeoutError, ProxyError) as exc:
            raise _wrap(exc) from exc
        return WebSocketHandshake(101, {}, UpstreamWebSocket(ws))
