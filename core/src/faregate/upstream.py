"""The one HTTP client the relay uses for upstreams, owned by the core: aiohttp's
connection pool with the core's timeouts.

Not httpx on this path: measured here, httpx (even over an aiohttp transport) cost
~0.3 ms of CPU per request, a third of the gateway's budget (docs/benchmarks.md), and
its client keeps upstream cookies across tenants. httpx stays for everything off the
hot path (tests, admin tools).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import aiohttp

from faregate import __version__
from faregate.contracts import UpstreamRequest

USER_AGENT = f"faregate/{__version__}"


class UpstreamTransportError(Exception):
    """The upstream could not be reached or the connection broke. ``eof`` is True when
    the upstream closed the connection in the middle of a body."""

    def __init__(self, message: str, *, eof: bool = False, timeout: bool = False) -> None:
        super().__init__(message)
        self.eof = eof
        self.timeout = timeout


def _wrap(exc: BaseException) -> UpstreamTransportError:
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

    async def aclose(self) -> None:
        self._resp.release()


class UpstreamClient:
    def __init__(self, *, connect_timeout: float, first_byte_timeout: float,
                 max_connections: int = 1000) -> None:
        self._connect = connect_timeout
        self._first_byte = first_byte_timeout
        self._max = max_connections
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(limit=self._max, limit_per_host=0, keepalive_timeout=60)
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect),
            cookie_jar=aiohttp.DummyCookieJar(),  # never carry one tenant's cookies to the next
            auto_decompress=True,
        )

    async def stop(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()

    async def send(self, req: UpstreamRequest, *, stream: bool = False) -> UpstreamResponse:
        """Send and wait for the response headers (``first_byte_timeout``); the body is
        read by the caller."""
        assert self._session is not None, "UpstreamClient.start() was not awaited"
        # our own User-Agent rather than skip_auto_headers, which sends aiohttp down a slow path
        req.headers.setdefault("User-Agent", USER_AGENT)
        try:
            async with asyncio.timeout(self._first_byte):
                resp = await self._session.request(req.method, req.url, headers=req.headers, data=req.body,
                                                   allow_redirects=False)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise _wrap(exc) from exc
        return UpstreamResponse(resp)
