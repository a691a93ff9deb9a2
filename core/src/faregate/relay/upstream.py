"""The one HTTP client the relay uses for upstreams: httpx's API over an aiohttp
transport (httpx's own pool collapses under concurrency, encode/httpx#3215), with
connection pools and timeouts owned by the core."""

from __future__ import annotations

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

from faregate.contracts import UpstreamRequest


class UpstreamClient:
    def __init__(self, *, connect_timeout: float, first_byte_timeout: float,
                 max_connections: int = 1000) -> None:
        self._connect = connect_timeout
        self._first_byte = first_byte_timeout
        self._session: aiohttp.ClientSession | None = None
        self._max = max_connections
        self.client: httpx.AsyncClient | None = None

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(limit=self._max, limit_per_host=0, keepalive_timeout=60,
                                         enable_cleanup_closed=True)
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect),
            auto_decompress=True,
            skip_auto_headers=("User-Agent",),
        )
        self.client = httpx.AsyncClient(
            transport=AiohttpTransport(client=self._session),
            timeout=httpx.Timeout(self._first_byte, connect=self._connect),
        )

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.aclose()
        if self._session is not None and not self._session.closed:
            await self._session.close()

    async def send(self, req: UpstreamRequest, *, stream: bool) -> httpx.Response:
        assert self.client is not None, "UpstreamClient.start() was not awaited"
        request = self.client.build_request(req.method, req.url, headers=req.headers, content=req.body)
        return await self.client.send(request, stream=stream)
