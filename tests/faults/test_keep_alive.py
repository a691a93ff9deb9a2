"""A connection stays usable after an answer given before the request's body arrived.

Hypercorn closes such a connection silently when the answer ends; a keep-alive client
then sent its next request into the dead socket ("Server disconnected without sending a
response": a flaky CI failure in tests/test_plugin_sets.py found it)."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest

from faregate.testing.harness import GatewayServer

BODY = b'{"model": "m", "messages": []}'


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
    await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", "0"))), 5)
    return status, headers


def _request_head(path: str, length: int) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


@pytest.mark.parametrize("path", ["/v1/no-such-endpoint", "/v1/chat/completions"])  # 404 / 401 before the body
async def test_a_body_that_comes_late_keeps_the_connection(gateway: GatewayServer, path: str) -> None:
    url = urlsplit(gateway.base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        writer.write(_request_head(path, len(BODY)))
        await writer.drain()
        await asyncio.sleep(0.05)  # the headers are read and answered before the body is sent
        writer.write(BODY)
        await writer.drain()
        status, headers = await _read_response(reader)
        assert status in (401, 404) and headers.get("connection", "").lower() != "close"
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n")  # the same connection, reused
        await writer.drain()
        status, _ = await _read_response(reader)
        assert status == 200
    finally:
        writer.close()


async def test_a_body_that_never_comes_is_answered_with_connection_close(gateway: GatewayServer) -> None:
    url = urlsplit(gateway.base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        writer.write(_request_head("/v1/no-such-endpoint", 1000))
        await writer.drain()
        status, headers = await _read_response(reader)
        assert status == 404 and headers["connection"].lower() == "close"  # the client knows not to reuse it
    finally:
        writer.close()
