"""Inbound requests built by hand, for testing a format's methods without a server."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faregate import jsonutil
from faregate.contracts import Route
from faregate.contracts.inbound import InboundRequest


def inbound_request(body: Any = None, *, path: str = "/", method: str = "POST", kind: str = "chat",
                    headers: Mapping[str, str] | None = None, query: Mapping[str, str] | None = None,
                    path_params: Mapping[str, str] | None = None, route: Route | None = None,
                    client_ip: str = "127.0.0.1") -> InboundRequest:
    """An :class:`~faregate.contracts.inbound.InboundRequest` as the edge would make it
    (``body`` is JSON-encoded unless it is bytes; header names are lower-cased, as a
    case-insensitive mapping would find them)."""
    raw = body if isinstance(body, bytes) else b"" if body is None else jsonutil.dumps(body)

    async def read_body() -> bytes:
        return raw

    return InboundRequest(method=method, path=path, route=route or Route(method, path, kind=kind),
                          path_params=dict(path_params or {}), query=dict(query or {}),
                          headers={k.lower(): v for k, v in (headers or {}).items()}, client_ip=client_ip,
                          read_body=read_body)
