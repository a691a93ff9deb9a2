"""An httpx transport whose every TCP connection goes through :func:`resolve_checked`:
the host is resolved once, every address checked, and the socket opened to a checked
address. TLS (SNI, certificate check) and the Host header keep the URL's own name,
because httpcore hands the original host to ``start_tls`` and httpx builds Host from
the URL; only the TCP connect is redirected to the pinned address."""

from __future__ import annotations

import ssl
from collections.abc import Collection, Iterable

import httpcore
import httpx

from faregate.net.addresses import AddressCategory
from faregate.net.resolve import Resolver, resolve_checked


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """A network backend that refuses to connect to refused address categories."""

    def __init__(self, resolver: Resolver, allow: Collection[AddressCategory], *, resolve_timeout: float,
                 inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._resolver = resolver
        self._allow = frozenset(allow)
        self._resolve_timeout = resolve_timeout
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        addresses = await resolve_checked(host, self._resolver, allow=self._allow, timeout=self._resolve_timeout)
        failure: Exception | None = None
        for address in addresses:  # all were checked: trying the next one on failure is safe
            try:
                return await self._inner.connect_tcp(str(address), port, timeout=timeout, local_address=local_address,
                                                     socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # resolve_checked never returns an empty list
        raise failure

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("the guarded fetcher does not connect to unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` (its request/response and error mapping) over a
    connection pool that connects through a :class:`GuardedBackend`. No proxy, no
    environment: a proxy would resolve the name itself, past the check."""

    def __init__(self, backend: GuardedBackend, *, verify: ssl.SSLContext | bool = True,
                 limits: httpx.Limits | None = None) -> None:
        limits = limits or httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=30)
        super().__init__(verify=verify, trust_env=False, limits=limits)
        # httpx has no network-backend option: replace the pool it built (pinned by tests/security/test_ssrf.py)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=backend,
        )
