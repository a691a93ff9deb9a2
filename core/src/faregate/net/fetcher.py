"""The one way the gateway fetches a URL it was *given* (an image URL in a message, a
webhook, a model list, later OAuth endpoints) rather than configured by an admin: no
automatic redirects (each hop re-checked, a bounded number of them), every connection
to a checked, pinned address (see :mod:`faregate.net.transport`), a time limit over all
hops and a cap on the response size."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpcore
import httpx

from faregate import __version__
from faregate.net.addresses import AddressCategory
from faregate.net.errors import FetchError, shown
from faregate.net.resolve import Resolver, check_literal, system_resolver
from faregate.net.transport import GuardedBackend, GuardedTransport

MiB = 1 << 20


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int
    headers: httpx.Headers
    content: bytes


def _checked_host(url: str, allow: Iterable[AddressCategory]) -> str:
    """The URL's host, after the checks needing no DNS (scheme, literal addresses in every
    form, ``localhost``, metadata names): a clear error before httpx parses the URL, and
    forms httpx refuses (``0177.0.0.1``) still get their category."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        raise FetchError("not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise FetchError(f"only http:// and https:// URLs are fetched, not {parts.scheme[:20]!r}")
    if not host:
        raise FetchError("the URL has no host")
    check_literal(host, frozenset(allow))
    return host


async def _read_capped(response: httpx.Response, limit: int, host: str) -> bytes:
    too_large = FetchError(f"the response from {shown(host)} is larger than {limit} bytes", code="response_too_large")
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large  # refused before reading a byte
    body = bytearray()
    async for chunk in response.aiter_bytes():  # decoded bytes are counted: a gzip bomb stops at the cap
        body += chunk
        if len(body) > limit:
            raise too_large
    return bytes(body)


class GuardedFetcher:
    """Fetch URLs from outside, refusing loopback, private, link-local, cloud metadata,
    CGNAT, multicast, reserved, unspecified and broadcast addresses. ``allow`` lets
    categories through (tests allow ``LOOPBACK`` for a local server); ``resolver`` and
    ``network_backend`` are injectable for tests. One instance keeps a connection pool:
    share it, and :meth:`aclose` it at shutdown."""

    def __init__(self, *, allow: Iterable[AddressCategory] = (), resolver: Resolver = system_resolver,
                 max_redirects: int = 5, max_bytes: int = 10 * MiB, timeout: float = 30.0,
                 connect_timeout: float = 10.0, verify: ssl.SSLContext | bool = True,
                 network_backend: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.allow = frozenset(allow)
        self.max_redirects = max_redirects
        self.max_bytes = max_bytes
        self.timeout = timeout
        backend = GuardedBackend(resolver, self.allow, resolve_timeout=connect_timeout, inner=network_backend)
        self._client = httpx.AsyncClient(
            transport=GuardedTransport(backend, verify=verify), follow_redirects=False, trust_env=False,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            # identity: what is counted against max_bytes is what was sent
            headers={"User-Agent": f"faregate/{__version__}", "Accept-Encoding": "identity"})

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> GuardedFetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def fetch(self, url: str, *, method: str = "GET", headers: Mapping[str, str] | None = None,
                    content: bytes | None = None, max_bytes: int | None = None) -> Fetched:
        """The final response after at most ``max_redirects`` redirects (307/308 keep the
        method and body, 301/302/303 become a GET, credentials are dropped across origins:
        httpx's rules). Raises :class:`FetchError` (:class:`BlockedAddress` for a refused
        address, at whichever hop it appears)."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        host = _checked_host(url, self.allow)
        try:
            async with asyncio.timeout(self.timeout):  # over all hops, not per read
                request = self._client.build_request(method, url, headers=headers, content=content)
                for _ in range(self.max_redirects + 1):
                    response = await self._client.send(request, stream=True)
                    try:
                        if response.next_request is None:
                            body = await _read_capped(response, limit, host)
                            return Fetched(str(response.url), response.status_code, response.headers, body)
                        request = response.next_request
                    finally:
                        await response.aclose()
                    host = _checked_host(str(request.url), self.allow)
                raise FetchError(f"more than {self.max_redirects} redirects (last to {shown(host)})",
                                 code="too_many_redirects")
        except (TimeoutError, httpx.TimeoutException):
            raise FetchError(f"fetching from {shown(host)} timed out", code="fetch_timeout") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            # the class only: httpx's messages may quote the URL, query string and all
            raise FetchError(f"could not fetch from {shown(host)} ({type(exc).__name__})") from None
