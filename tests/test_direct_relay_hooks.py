"""The relay's direct ASGI layer (faregate.edge.direct_relay) steps aside for an app-wide
hook it does not know: a plugin's before-request function runs on every relay request, as
it did before the layer; one marked ``skip_on_relay`` runs on the other routes only."""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import urlsplit

import pytest
from quart import request

from faregate.edge.direct_relay import DirectRelay, skip_on_relay
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

MODEL = "gpt-4o-mini"
CHAT = b'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'


async def chat(gateway: GatewayServer, fake: FakeOpenAI) -> bytes:
    admin = AdminClient(gateway.base_url)
    try:
        await admin.setup_root()
        await admin.add_channel(base_url=fake.base_url, models=MODEL)
        key = await admin.add_token(remain_quota=5_000_000)
    finally:
        await admin.close()
    url = urlsplit(gateway.base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        writer.write(f"POST /v1/chat/completions HTTP/1.1\r\nHost: g\r\nAuthorization: Bearer {key}\r\n"
                     f"Content-Length: {len(CHAT)}\r\nConnection: close\r\n\r\n".encode() + CHAT)
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


def layer(gateway: GatewayServer) -> DirectRelay:
    found = gateway.app.asgi_app.app  # inside TrustedProxies
    assert isinstance(found, DirectRelay)
    return found


async def test_a_hook_marked_skip_on_relay_leaves_the_relay_direct(make_gateway: Any) -> None:
    gateway: GatewayServer = await make_gateway()
    seen: list[str] = []

    @skip_on_relay
    async def pages_only() -> None:
        seen.append(request.path)

    gateway.app.before_request(pages_only)
    async with FakeOpenAI() as fake:
        answer = await chat(gateway, fake)
    assert answer.startswith(b"HTTP/1.1 200")
    assert "/v1/chat/completions" not in seen and "/api/user/login" in seen  # the management API's still ran it
    assert layer(gateway).enabled() and ("POST", "/v1/chat/completions") in layer(gateway).known


async def test_an_unknown_app_wide_hook_keeps_relay_routes_on_quart(make_gateway: Any,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    gateway: GatewayServer = await make_gateway()
    seen: list[str] = []

    async def every_request() -> None:
        seen.append(request.path)

    gateway.app.before_request(every_request)  # the layer decides at its first relay request
    with caplog.at_level(logging.INFO, logger="faregate"):
        async with FakeOpenAI() as fake:
            answer = await chat(gateway, fake)
    assert answer.startswith(b"HTTP/1.1 200") and "/v1/chat/completions" in seen
    assert not layer(gateway).enabled() and not layer(gateway).known
    assert any(r.getMessage() == "relay routes served through Quart: the app has a before-request function "
               "test_an_unknown_app_wide_hook_keeps_relay_routes_on_quart.<locals>.every_request"
               for r in caplog.records)
