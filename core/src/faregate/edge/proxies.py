"""Believing a reverse proxy only when it is one: an ASGI wrapper that, for a peer in
``trusted_proxies``, takes the client address from ``X-Forwarded-For`` (the right-most
address that is not itself a trusted proxy) or ``X-Real-IP``, and keeps the proxy's
``X-Request-Id``; from any other peer those headers are dropped, so nobody can choose
the address a login throttle or an IP allow list sees, nor forge a request id."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_PROXY_HEADERS = (b"x-forwarded-for", b"x-real-ip", b"x-request-id")


class TrustedProxies:
    def __init__(self, app: Any, trusted: Iterable[str]) -> None:
        self.app = app
        self.networks: tuple[_Network, ...] = tuple(ipaddress.ip_network(n, strict=False) for n in trusted)

    def trusts(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.networks)

    async def __call__(self, scope: dict[str, Any], receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if scope["type"] in ("http", "websocket"):
            client = scope.get("client")
            peer = client[0] if client else ""
            headers: list[tuple[bytes, bytes]] = scope["headers"]
            if self.networks and self.trusts(peer):
                address = self.client_address(headers)
                if address:
                    scope = {**scope, "client": (address, 0)}
            elif any(name in _PROXY_HEADERS for name, _ in headers):
                scope = {**scope, "headers": [(n, v) for n, v in headers if n not in _PROXY_HEADERS]}
        await self.app(scope, receive, send)

    def client_address(self, headers: list[tuple[bytes, bytes]]) -> str:
        forwarded = b",".join(v for n, v in headers if n == b"x-forwarded-for").decode("latin-1")
        for hop in reversed([part.strip() for part in forwarded.split(",") if part.strip()]):
            if not _is_ip(hop):
                return ""  # garbage in the chain: do not guess
            if not self.trusts(hop):
                return hop
        real = next((v.decode("latin-1").strip() for n, v in headers if n == b"x-real-ip"), "")
        return real if _is_ip(real) else ""


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
