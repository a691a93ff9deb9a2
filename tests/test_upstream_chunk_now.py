"""UpstreamResponse.chunk_now: a streamed body's bytes that have arrived, without waiting (the
relay arms its idle timer only when nothing has); None while the upstream pauses, b"" at the end."""

from __future__ import annotations

import asyncio

import aiohttp

from faregate.upstream import UpstreamResponse
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.server import Fault

BODY = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "hello there"}]}


async def test_what_has_arrived_then_none_while_paused_then_the_end(fake_openai: FakeOpenAI) -> None:
    fake_openai.push_fault(Fault("stall", after_chunks=1, delay=1))
    async with aiohttp.ClientSession() as session:
        resp = UpstreamResponse(await session.post(fake_openai.base_url + "/v1/chat/completions", json=BODY,
                                                   headers={"Authorization": "Bearer sk-test"}))
        first = await resp.read_chunk()
        assert first.startswith(b"data: ")
        assert resp.chunk_now() is None  # the upstream pauses: nothing is there
        received = bytearray()
        while True:
            await asyncio.sleep(0.05)
            chunk = resp.chunk_now()
            if chunk == b"":
                break
            received += chunk or b""
        assert received.rstrip().endswith(b"data: [DONE]")
        assert resp.chunk_now() == b""
        await resp.aclose()
