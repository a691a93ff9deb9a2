"""An upstream 200 that is not a valid answer, before any byte reached the client, is a
failed attempt: the next channel answers (issue 8, #11). After content has flowed, a
broken stream ends in-band. With no channel left, the client gets a 502 and pays nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import openai
import pytest
import pytest_asyncio

from faregate import jsonutil
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs, error_logs
from faregate_adapter_openai.testing import FakeOpenAI, Fault

MODEL = "gpt-4o-mini"
MSGS = [{"role": "user", "content": "hello there"}]


@dataclass
class Pair:
    server: GatewayServer
    client: openai.AsyncOpenAI
    a: FakeOpenAI
    b: FakeOpenAI
    id_a: int
    id_b: int


@pytest_asyncio.fixture
async def pair(gateway: GatewayServer, admin: AdminClient) -> AsyncIterator[Pair]:
    """Channel A (tried first) and B; one retry."""
    async with FakeOpenAI() as a, FakeOpenAI() as b:
        id_a = await admin.add_channel(base_url=a.base_url, models=MODEL, name="A", priority=10)
        id_b = await admin.add_channel(base_url=b.base_url, models=MODEL, name="B", priority=0)
        await admin.set_option("RetryTimes", "1")
        client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(),
                                    max_retries=0)
        yield Pair(gateway, client, a, b, id_a, id_b)
        await client.close()


#: chunks that are JSON but not chunks: a choice that is not an object, a delta that is not one,
#: usage counts that are not numbers (each once crashed the same-format stream reader)
MISSHAPEN = [b'{"choices": ["x"]}', b'{"choices": [{"index": 0, "delta": "text"}]}',
             b'{"choices": [], "usage": {"prompt_tokens": "many", "completion_tokens": []}}']
BROKEN = [Fault("malformed_json"), Fault("html", status=200), Fault("malformed_chunk", after_chunks=0),
          Fault("stream_cut", after_chunks=0),
          *(Fault("malformed_chunk", after_chunks=0, body=chunk) for chunk in MISSHAPEN)]


@pytest.mark.parametrize("fault", BROKEN, ids=[f"{f.kind}-{i}" for i, f in enumerate(BROKEN)])
@pytest.mark.parametrize("stream", [False, True])
async def test_broken_200_fails_over(pair: Pair, fault: Fault, stream: bool) -> None:
    pair.a.push_fault(fault)
    if stream:
        chunks = [c async for c in await pair.client.chat.completions.create(
            model=MODEL, messages=MSGS, stream=True, stream_options={"include_usage": True})]
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        text = (await pair.client.chat.completions.create(model=MODEL, messages=MSGS)).choices[0].message.content
    assert text, "channel B answered"
    assert len(pair.b.requests) == 1
    (row,) = await consume_logs(pair.server)
    assert row.channel_id == pair.id_b
    assert jsonutil.loads(row.other)["admin_info"]["use_channel"] == [pair.id_a, pair.id_b]


async def test_broken_stream_after_content_ends_in_band(pair: Pair) -> None:
    pair.a.push_fault(Fault("malformed_chunk", after_chunks=2, delay=0.2))
    stream = await pair.client.chat.completions.create(model=MODEL, messages=MSGS, stream=True)
    seen = ""
    with pytest.raises(openai.APIError):
        async for chunk in stream:
            seen += chunk.choices[0].delta.content or "" if chunk.choices else ""
    assert seen, "content reached the client before the break"
    assert pair.b.requests == []


async def test_no_channel_left_is_a_502_and_free(pair: Pair) -> None:
    pair.a.push_fault(Fault("malformed_json"))
    pair.b.push_fault(Fault("malformed_json"))
    with pytest.raises(openai.APIStatusError) as info:
        await pair.client.chat.completions.create(model=MODEL, messages=MSGS)
    assert info.value.status_code == 502
    assert isinstance(info.value.body, dict) and info.value.body["code"] == "bad_response_body"
    assert await consume_logs(pair.server) == []
    (row,) = await error_logs(pair.server)
    assert row.quota == 0
