"""Resolve a host once and check every address it resolves to; the caller connects to
exactly these addresses, so there is no second lookup an attacker's DNS could answer
differently (DNS rebinding)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from ipaddress import ip_address

from faregate.net.addresses import AddressCategory, IPAddress, address_category, literal_address, name_category
from faregate.net.errors import BlockedAddress, FetchError, shown

#: host name → its addresses as text; injectable, so tests (and a future DNS cache) need no real DNS
Resolver = Callable[[str], Awaitable[Sequence[str]]]


async def system_resolver(host: str) -> list[str]:
    """The operating system's resolver (``getaddrinfo``, in a thread)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_literal(host: str, allow: Collection[AddressCategory]) -> IPAddress | None:
    """Without DNS: raise :class:`BlockedAddress` when ``host`` is a refused name or
    address; return the address when ``host`` is one (``None`` for a name to resolve)."""
    category = name_category(host)
    if category is not None and category not in allow:
        raise BlockedAddress(host, category, resolved=False)
    ip = literal_address(host)
    if ip is not None:
        category = address_category(ip)
        if category is not None and category not in allow:
            raise BlockedAddress(host, category, resolved=False)
    return ip


async def resolve_checked(host: str, resolver: Resolver, *, allow: Collection[AddressCategory] = (),
                          timeout: float = 10.0) -> list[IPAddress]:
    """Every address of ``host``, each checked: one refused address refuses the host (a
    name resolving to a public and a private address is an attack, not a fallback).
    Raises :class:`BlockedAddress`, or :class:`FetchError` when the name does not resolve."""
    ip = check_literal(host, allow)
    if ip is not None:
        return [ip]
    try:
        answers = await asyncio.wait_for(resolver(host), timeout)
    except (OSError, TimeoutError):
        raise FetchError(f"{shown(host)} does not resolve") from None
    addresses: list[IPAddress] = []
    for answer in answers:
        try:
            address = ip_address(answer.split("%", 1)[0])
        except ValueError:
            raise FetchError(f"{shown(host)} does not resolve to an IP address") from None
        category = address_category(address)
        if category is not None and category not in allow:
            raise BlockedAddress(host, category, resolved=True)
        addresses.append(address)
    if not addresses:
        raise FetchError(f"{shown(host)} does not resolve")
    return addresses


@dataclass(slots=True)
class AddressPolicy:
    """Where one kind of outbound connection may go: the refused categories it lets
    through (``allow``) and the resolver its names go through. The gateway keeps one for
    channels (``Gateway.channel_addresses``), read when a channel is saved and at each
    connection a channel makes; tests swap its ``resolver`` to play DNS."""

    allow: frozenset[AddressCategory]
    resolver: Resolver = system_resolver

    async def resolve(self, host: str, *, timeout: float = 10.0) -> list[IPAddress]:
        """:func:`resolve_checked` under this policy."""
        return await resolve_checked(host, self.resolver, allow=self.allow, timeout=timeout)

    def refusal(self, ip: IPAddress) -> AddressCategory | None:
        """The category ``ip`` is refused for, None when it may be reached."""
        category = address_category(ip)
        return category if category is not None and category not in self.allow else None
