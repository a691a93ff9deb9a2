"""Helpers for testing payment plugins against a real gateway (``faregate.testing.harness``):
a logged-in user, the quota and orders as the management API shows them, replaying a callback
in sequence and in parallel, and a request that declares a body larger than it sends (to show a
cap refuses it before reading)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer


async def user_session(server: GatewayServer, admin: AdminClient, username: str, *,
                       email: str = "") -> AdminClient:
    """A new ordinary user, logged in (cookie + ``New-Api-User``)."""
    await admin.ok("POST", "/api/user/", json={"username": username, "password": ROOT_PASSWORD})
    client = AdminClient(server.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login",
                                      json={"username": username, "password": ROOT_PASSWORD}))["id"]
    if email:
        await admin.ok("PUT", "/api/user/", json={"id": client.user_id, "email": email})
    return client


async def quota_of(admin: AdminClient, user_id: int | None) -> int:
    quota: int = (await admin.ok("GET", f"/api/user/{user_id}"))["quota"]
    return quota


async def order(admin: AdminClient, trade_no: str) -> dict[str, Any]:
    """The order ``trade_no`` as ``GET /api/user/topup`` (admin) lists it."""
    page = await admin.ok("GET", "/api/user/topup", params={"keyword": trade_no})
    found = [item for item in page["items"] if item["trade_no"] == trade_no]
    assert len(found) == 1, page
    row: dict[str, Any] = found[0]
    return row


async def top_up_logs(admin: AdminClient, user_id: int | None) -> list[dict[str, Any]]:
    """The user's top-up log rows (type 1), newest first."""
    page = await admin.ok("GET", "/api/log/", params={"type": 1, "page_size": 100})
    return [row for row in page["items"] if row["user_id"] == user_id]


async def replay(send: Callable[[], Awaitable[httpx.Response]], times: int = 10) -> list[int]:
    """``send`` ``times`` times one after another, then ``times`` at once: every status."""
    statuses = [(await send()).status_code for _ in range(times)]
    statuses += [r.status_code for r in await asyncio.gather(*(send() for _ in range(times)))]
    return statuses


async def declare_oversized(url: str, length: int, headers: dict[str, str] | None = None,
                            timeout: float = 5.0) -> tuple[int, bytes]:
    """POST to ``url`` declaring ``Content-Length: length`` but sending only a few bytes: a
    server that reads the body first would wait for the rest (and time out here); one that caps
    it answers at once. Returns the status and the body of the answer."""
    return await _raw_post(url, [f"Content-Length: {length}"], b'{"id": "', headers, timeout)


async def send_chunked(url: str, size: int, headers: dict[str, str] | None = None,
                       timeout: float = 5.0) -> tuple[int, bytes]:
    """POST ``size`` bytes to ``url`` in 8 KiB chunks (no declared length): the status and the
    body of the answer."""
    chunk = b"x" * 8192
    body = b"".join(b"%x\r\n%s\r\n" % (len(part), part)
                    for part in (chunk[: min(8192, size - n)] for n in range(0, size, 8192))) + b"0\r\n\r\n"
    return await _raw_post(url, ["Transfer-Encoding: chunked"], body, headers, timeout)


async def _raw_post(url: str, framing: list[str], body: bytes, headers: dict[str, str] | None,
                    timeout: float) -> tuple[int, bytes]:
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
    head = [f"POST {parts.path}{'?' + parts.query if parts.query else ''} HTTP/1.1", f"Host: {parts.netloc}",
            *framing, "Content-Type: application/json", "Connection: close",
            *(f"{k}: {v}" for k, v in (headers or {}).items())]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    await writer.drain()
    try:
        raw = await asyncio.wait_for(reader.read(65536), timeout)
    finally:
        writer.close()
    status_line, _, rest = raw.partition(b"\r\n")
    body = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), body
