"""A client that leaves before its answer starts never leaves quota held: the server
cancels the relay (or drops a stream it never began to send), and the reservation is
refunded with an error row, or billed for what the upstream already produced. Before this,
the reservation stayed held in the worker's memory until it stopped."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import httpx
import pytest

from faregate import jsonutil
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs, error_logs
from faregate_adapter_openai.testing import FakeOpenAI, Fault

MODEL = "gpt-4o-mini"


async def _nothing_held(server: GatewayServer) -> bool:
    for _ in range(100):
        if all(lease.reserved == 0 for lease in server.gateway.ledger.leases.values()):
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.mark.parametrize("stream", [False, True])
async def test_leaving_while_the_upstream_thinks_refunds(gateway: GatewayServer, admin: AdminClient,
                                                         fake_openai: FakeOpenAI, stream: bool) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
    key = await admin.add_token()
    fake_openai.push_fault(Fault("slow_first_byte", delay=2))
    body = {"model": MODEL, "stream": stream, "messages": [{"role": "user", "content": "are you there"}]}
    async with httpx.AsyncClient(timeout=0.5) as http:
        with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes the connection
            await http.post(gateway.base_url + "/v1/chat/completions", json=body,
                            headers={"Authorization": f"Bearer {key}"})
    assert await _nothing_held(gateway), "the reservation is still held"
    rows = await error_logs(gateway)
    assert len(rows) == 1 and jsonutil.loads(rows[0].other)["error_code"] == "client_gone"
    assert await consume_logs(gateway) == []


async def test_a_stream_dropped_before_its_body_is_settled(gateway: GatewayServer) -> None:
    """The body of a streamed answer that the server closes (or drops) before asking for
    its first chunk: the generator's own ``finally`` never runs, the guard settles."""
    from faregate.exchange.streaming import GuardedStream

    settled: list[str] = []

    async def body() -> AsyncGenerator[bytes, None]:
        try:
            yield b"data: 1\n\n"
        finally:
            settled.append("generator")

    closed = GuardedStream(body(), lambda: settled.append("abandoned"))
    await closed.aclose()
    assert settled == ["abandoned"]
    settled.clear()
    dropped = GuardedStream(body(), lambda: settled.append("abandoned"))
    del dropped
    assert settled == ["abandoned"]
    settled.clear()
    started = GuardedStream(body(), lambda: settled.append("abandoned"))
    assert await started.__anext__() == b"data: 1\n\n"
    await started.aclose()
    assert settled == ["generator"]  # once started, the generator settles itself
