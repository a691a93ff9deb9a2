"""aiohttp connections to checked addresses only: the upstream client's, which every call a
channel makes goes through (relay, streams, WebSockets, channel tests, model lists,
balances, token grants). A name resolves through :class:`CheckedResolver` (every address
checked, one refused address refuses the name); every socket is opened by
:func:`checked_socket_factory`, which checks the address it is about to connect to, so a
literal address (aiohttp hands those to no resolver) and an answer from aiohttp's DNS cache
are checked too; a socks proxy's own address is resolved and checked at each connection
(:class:`CheckedSocksConnector`). A refusal is :class:`RefusedAddress`, raised before a
packet is sent. The check at connect time is what counts: an address checked when a channel
was saved may resolve elsewhere later (DNS rebinding)."""

from __future__ import annotations

import asyncio
import socket
from ipaddress import ip_address
from ssl import SSLContext
from typing import Any

import python_socks
from aiohappyeyeballs import AddrInfoType, SocketFactoryType
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.client_proto import ResponseHandler
from aiohttp_socks import ProxyConnector

from faregate.net.errors import BlockedAddress, FetchError, refusal, shown
from faregate.net.resolve import AddressPolicy

_NUMERIC = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


class RefusedAddress(OSError):
    """A connection not made: its host is, or resolves to, an address the policy refuses.
    An ``OSError``, so every client path handles it as a connection that failed."""

    def __init__(self, message: str, *, host: str, category: str) -> None:
        super().__init__(message)
        self.host = host
        self.category = category


def refused_in(exc: BaseException) -> RefusedAddress | None:
    """The :class:`RefusedAddress` behind a client error: aiohttp wraps it (a
    ``ClientConnectorError``'s ``os_error``), aiohttp-socks lets it through."""
    current: BaseException | None = exc
    for _ in range(4):  # the chains are short; no loop on a cyclic one
        if current is None or isinstance(current, RefusedAddress):
            return current
        wrapped = getattr(current, "os_error", None)
        current = wrapped if isinstance(wrapped, BaseException) else current.__cause__
    return None


async def _checked(policy: AddressPolicy, host: str, timeout: float) -> list[str]:
    """Every address of ``host`` (a name or a literal), each allowed by ``policy``."""
    try:
        return [str(a) for a in await policy.resolve(host, timeout=timeout)]
    except BlockedAddress as exc:
        raise RefusedAddress(exc.message, host=host, category=exc.category) from None
    except FetchError:
        raise socket.gaierror(socket.EAI_NONAME, f"{shown(host)} does not resolve") from None


class CheckedResolver(AbstractResolver):
    """aiohttp's resolver for channel connections: the policy's resolver, every answer
    checked. aiohttp keeps what it returns in its DNS cache (10 s): a cached answer was
    checked, and the socket factory checks it again at each new connection."""

    def __init__(self, policy: AddressPolicy, *, timeout: float) -> None:
        self._policy = policy
        self._timeout = timeout

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        results: list[ResolveResult] = []
        for address in await _checked(self._policy, host, self._timeout):
            found = socket.AF_INET6 if ":" in address else socket.AF_INET
            if family in (socket.AF_UNSPEC, found):
                results.append(ResolveResult(hostname=host, host=address, port=port, family=found, proto=0,
                                             flags=_NUMERIC))
        if not results:
            raise socket.gaierror(socket.EAI_ADDRFAMILY, f"{shown(host)} has no address of the family asked for")
        return results

    async def close(self) -> None:
        pass


def checked_socket_factory(policy: AddressPolicy) -> SocketFactoryType:
    """aiohttp's ``socket_factory``: refuses the address a socket would connect to when the
    policy does, before the socket exists."""

    def open_socket(addr_info: AddrInfoType) -> socket.socket:
        family, kind, proto, _, sockaddr = addr_info
        host = str(sockaddr[0])
        category = policy.refusal(ip_address(host.split("%", 1)[0]))
        if category is not None:
            raise RefusedAddress(refusal(host, category, resolved=False), host=host, category=category)
        return socket.socket(family=family, type=kind, proto=proto)

    return open_socket


class CheckedSocksConnector(ProxyConnector):
    """aiohttp-socks' connector with its proxy's address checked at each connection:
    python-socks would resolve the proxy's name itself, past the check, so the name is
    resolved here and python-socks is handed a checked address. The target's name goes
    to the proxy unresolved (``rdns``): which address it reaches is the proxy's to decide."""

    def __init__(self, *, policy: AddressPolicy, resolve_timeout: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._proxy_name = self._proxy_host
        self._policy = policy
        self._resolve_timeout = resolve_timeout

    async def _connect_via_proxy(self, host: str, port: int, ssl: SSLContext | None = None,
                                 timeout: float | None = None) -> tuple[asyncio.Transport, ResponseHandler]:
        failure: Exception | None = None
        for address in await _checked(self._policy, self._proxy_name, self._resolve_timeout):
            # read by the proxy client the parent builds before its first await, so each
            # connection uses the address set here; every value it ever holds was checked
            self._proxy_host = address
            try:
                return await super()._connect_via_proxy(host, port, ssl, timeout)
            except python_socks.ProxyConnectionError as exc:  # this address did not answer: try the next
                failure = exc
        assert failure is not None  # _checked never returns an empty list
        raise failure
