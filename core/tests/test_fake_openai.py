"""Tests for faregate.testing.fake_openai, driven by the official ``openai`` SDK.

Every regular response, stream chunk and error body seen on the wire is validated
against OpenAI's official OpenAPI spec (faregate.testing.openai_schema).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from pathlib import Path

import httpx
import openai
import orjson
import pytest
import pytest_asyncio

from faregate.testing.fake_openai import REPLY_PREFIX, FakeOpenAI, Fault
from faregate.testing.openai_schema import (
    ValidationError,
    validate_chat_chunk,
    validate_chat_completion,
    validate_error,
)

try:  # newer openai SDKs ship their own httpx fork
    import httpx2

    _TRANSPORT = (httpx.TransportError, httpx2.TransportError)
    _TIMEOUT = (httpx.TimeoutException, httpx2.TimeoutException)
except ImportError:  # pragma: no cover
    _TRANSPORT = (httpx.TransportError,)
    _TIMEOUT = (httpx.TimeoutException,)

# What the SDK raises when a connection dies / times out mid-stream: wrapped in
# APIConnectionError / APITimeoutError by recent SDKs, the raw transport error by older ones.
STREAM_BROKEN = (openai.APIConnectionError, *_TRANSPORT)
STREAM_TIMEOUT = (openai.APITimeoutError, *_TIMEOUT)

SRC_DIR = str(Path(__file__).resolve().parents[1] / "src")  # for the CLI subprocess
KEY = "sk-test-1234567890"
MSGS = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is the capital of France?"},
]
EXPECTED = REPLY_PREFIX + "What is the capital of France?"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {"name": "get_time", "parameters": {"type": "object"}},
    },
]


_CLIENTS: list[openai.AsyncOpenAI] = []


async def close_clients() -> None:
    while _CLIENTS:
        await _CLIENTS.pop().close()


@pytest_asyncio.fixture
async def fake():
    async with FakeOpenAI(api_key=KEY, models=["my-model"]) as server:
        try:
            yield server
        finally:
            await close_clients()


def sdk(fake: FakeOpenAI, **kw) -> openai.AsyncOpenAI:
    """An SDK client for ``fake`` (closed by the ``fake`` fixture / close_clients())."""
    kw.setdefault("api_key", KEY)
    client = openai.AsyncOpenAI(base_url=fake.base_url + "/v1", max_retries=0, **kw)
    _CLIENTS.append(client)
    return client


async def close_writer(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


def raw(fake: FakeOpenAI, **kw) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=fake.base_url,
        headers={"authorization": f"Bearer {KEY}"},
        timeout=5,
        **kw,
    )


def sse_events(text: str) -> list[str]:
    assert text.endswith("\n\n")
    events = text[:-2].split("\n\n")
    for ev in events:
        assert ev.startswith("data: "), ev
    return [ev[len("data: ") :] for ev in events]


def expected_prompt_tokens(messages) -> int:
    return sum(max(1, len(m["content"]) // 4) + 3 for m in messages)


# --------------------------------------------------------------------------- regular


@pytest.mark.asyncio
async def test_regular_completion(fake):
    client = sdk(fake)
    resp = await client.chat.completions.create(model="gpt-4o-mini", messages=MSGS)
    assert resp.object == "chat.completion"
    assert resp.id.startswith("chatcmpl-")
    assert resp.model == "gpt-4o-mini"
    assert resp.service_tier == "default"
    choice = resp.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == EXPECTED
    assert choice.finish_reason == "stop"
    assert resp.usage.prompt_tokens == expected_prompt_tokens(MSGS)
    assert resp.usage.completion_tokens == len(EXPECTED) // 4
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    assert resp.usage.prompt_tokens_details.cached_tokens == 0
    assert resp.usage.completion_tokens_details.reasoning_tokens == 0

    rec = fake.requests[-1]
    assert rec["method"] == "POST" and rec["path"] == "/v1/chat/completions"
    assert rec["headers"]["authorization"] == f"Bearer {KEY}"
    assert rec["json"]["messages"] == MSGS

    async with raw(fake) as http:
        r = await http.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o", "messages": MSGS, "max_tokens": 1000},
        )
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body = validate_chat_completion(r.json())
    assert body["choices"][0]["message"] == {
        "role": "assistant",
        "content": EXPECTED,
        "refusal": None,
        "annotations": [],
    }
    assert body["choices"][0]["logprobs"] is None
    assert set(body) == {
        "id", "object", "created", "model", "choices", "usage", "service_tier", "system_fingerprint",
    }  # fmt: skip


@pytest.mark.asyncio
async def test_long_message_truncated_and_multipart_content(fake):
    long = "x" * 500
    client = sdk(fake)
    resp = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": [{"type": "text", "text": long}]}],
    )
    assert resp.choices[0].message.content == REPLY_PREFIX + "x" * 200
    assert resp.usage.prompt_tokens == 500 // 4 + 3


@pytest.mark.asyncio
@pytest.mark.parametrize("param", ["max_tokens", "max_completion_tokens"])
async def test_max_tokens_truncates(fake, param):
    client = sdk(fake)
    resp = await client.chat.completions.create(model="gpt-4o", messages=MSGS, **{param: 3})
    assert resp.choices[0].finish_reason == "length"
    assert resp.choices[0].message.content == EXPECTED[:12]
    assert resp.usage.completion_tokens == 3
    async with raw(fake) as http:
        r = await http.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o", "messages": MSGS, "stream": True, param: 3},
        )
    chunks = [validate_chat_chunk(json.loads(e)) for e in sse_events(r.text)[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == EXPECTED[:12]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


# --------------------------------------------------------------------------- streaming


@pytest.mark.asyncio
async def test_stream_with_usage(fake):
    client = sdk(fake)
    stream = await client.chat.completions.create(
        model="gpt-4o",
        messages=MSGS,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [c async for c in stream]
    with_usage = [c for c in chunks if c.usage is not None]
    assert len(with_usage) == 1 and with_usage[0] is chunks[-1]
    assert chunks[-1].choices == []
    assert chunks[-1].usage.prompt_tokens == expected_prompt_tokens(MSGS)
    assert chunks[-1].usage.completion_tokens == len(EXPECTED) // 4
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == EXPECTED
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert len({c.id for c in chunks}) == 1

    async with raw(fake) as http:
        r = await http.post(
            "/v1/chat/completions",
            json={
                "model": "gpt-4o",
                "messages": MSGS,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["transfer-encoding"] == "chunked"
    events = sse_events(r.text)
    assert events[-1] == "[DONE]"
    objs = [validate_chat_chunk(json.loads(e)) for e in events[:-1]]
    assert all("usage" in o for o in objs)
    assert [o["usage"] is not None for o in objs] == [False] * (len(objs) - 1) + [True]
    assert objs[0]["choices"][0]["delta"] == {
        "role": "assistant",
        "content": "",
        "refusal": None,
    }
    content_chunks = [o for o in objs if o["choices"] and o["choices"][0]["delta"].get("content")]
    assert len(content_chunks) >= 4
    assert objs[-2]["choices"][0] == {
        "index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop",
    }  # fmt: skip


@pytest.mark.asyncio
async def test_stream_without_usage(fake):
    client = sdk(fake)
    stream = await client.chat.completions.create(model="gpt-4o", messages=MSGS, stream=True)
    chunks = [c async for c in stream]
    assert all(c.usage is None for c in chunks)
    assert all(c.choices for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == EXPECTED

    async with raw(fake) as http:
        r = await http.post(
            "/v1/chat/completions",
            json={
                "model": "gpt-4o",
                "messages": MSGS,
                "stream": True,
                "stream_options": {"include_usage": False},
            },
        )
    events = sse_events(r.text)
    assert events[-1] == "[DONE]"
    objs = [validate_chat_chunk(json.loads(e)) for e in events[:-1]]
    assert not any("usage" in o for o in objs)
    assert objs[-1]["choices"][0]["finish_reason"] == "stop"


# --------------------------------------------------------------------------- tools


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("text", "tool_choice", "name"),
    [
        ("Please call tool for the weather", None, "get_weather"),
        ("hello", "required", "get_weather"),
        ("hello", {"type": "function", "function": {"name": "get_time"}}, "get_time"),
    ],
)
async def test_tool_call_regular(fake, text, tool_choice, name):
    client = sdk(fake)
    extra = {"tool_choice": tool_choice} if tool_choice is not None else {}
    resp = await client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": text}],
        tools=TOOLS,
        **extra,
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.id.startswith("call_") and call.type == "function"
    assert call.function.name == name
    assert json.loads(call.function.arguments) == {"city": "Paris"}

    async with raw(fake) as http:
        r = await http.post(
            "/v1/chat/completions",
            json={
                "model": "gpt-4o",
                "messages": [{"role": "user", "content": text}],
                "tools": TOOLS,
            }
            | extra,
        )
    validate_chat_completion(r.json())


@pytest.mark.asyncio
async def test_no_tool_call_without_trigger_or_after_tool_result(fake):
    client = sdk(fake)
    resp = await client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], tools=TOOLS
    )
    assert resp.choices[0].finish_reason == "stop" and resp.choices[0].message.tool_calls is None
    resp = await client.chat.completions.create(
        model="gpt-4o",
        messages=[
            {"role": "user", "content": "call tool"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
        tools=TOOLS,
    )
    assert resp.choices[0].finish_reason == "stop"
    assert resp.choices[0].message.content == REPLY_PREFIX + "call tool"


@pytest.mark.asyncio
async def test_tool_call_streaming(fake):
    client = sdk(fake)
    body = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "call tool now"}],
        "tools": TOOLS,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    stream = await client.chat.completions.create(**body)
    chunks = [c async for c in stream]
    first = chunks[0].choices[0].delta
    assert first.role == "assistant"
    tc = first.tool_calls[0]
    assert tc.index == 0 and tc.id.startswith("call_") and tc.type == "function"
    assert tc.function.name == "get_weather" and tc.function.arguments == ""
    args = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    )
    assert json.loads(args) == {"city": "Paris"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None

    async with raw(fake) as http:
        r = await http.post("/v1/chat/completions", json=body)
    events = sse_events(r.text)
    objs = [validate_chat_chunk(json.loads(e)) for e in events[:-1]]
    frags = [o for o in objs if o["choices"] and "tool_calls" in o["choices"][0]["delta"]]
    assert len(frags) >= 3
    for o in frags[1:]:
        (tc,) = o["choices"][0]["delta"]["tool_calls"]
        assert set(tc) == {"index", "function"} and set(tc["function"]) == {"arguments"}


# --------------------------------------------------------------------------- other endpoints


@pytest.mark.asyncio
async def test_models(fake):
    client = sdk(fake)
    page = await client.models.list()
    ids = [m.id for m in page.data]
    assert ids[:3] == ["gpt-4o", "gpt-4o-mini", "gpt-3.5-turbo"] and "my-model" in ids
    assert all(m.object == "model" and m.owned_by == "openai" for m in page.data)
    model = await client.models.retrieve("my-model")
    assert model.id == "my-model"
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("nope")


@pytest.mark.asyncio
async def test_auth(fake):
    client = sdk(fake, api_key="sk-wrong-key-000000")
    with pytest.raises(openai.AuthenticationError) as ei:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert ei.value.status_code == 401
    body = validate_error(ei.value.response.json())
    assert body["error"]["code"] == "invalid_api_key"
    assert body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith("Incorrect API key provided: ")
    assert "sk-wrong-key-000000" not in body["error"]["message"]
    async with httpx.AsyncClient(base_url=fake.base_url) as http:
        r = await http.get("/v1/models")
    assert r.status_code == 401
    validate_error(r.json())


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("method", "path", "content", "status", "param"),
    [
        ("GET", "/v1/nothing", None, 404, None),
        ("POST", "/v1/models", b"{}", 404, None),
        ("POST", "/v1/chat/completions", b"{not json", 400, None),
        ("POST", "/v1/chat/completions", b"", 400, None),
        ("POST", "/v1/chat/completions", b"[1, 2]", 400, None),
        ("POST", "/v1/chat/completions", b'{"messages": []}', 400, None),
        ("POST", "/v1/chat/completions", b'{"model": "gpt-4o"}', 400, "messages"),
        (
            "POST",
            "/v1/chat/completions",
            b'{"model": "gpt-4o", "messages": []}',
            400,
            "messages",
        ),
    ],
)
async def test_request_errors(fake, method, path, content, status, param):
    async with raw(fake) as http:
        r = await http.request(method, path, content=content)
    assert r.status_code == status
    assert r.headers["content-type"] == "application/json"
    err = validate_error(r.json())["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == param


# --------------------------------------------------------------------------- faults


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("status", "exc", "etype", "code"),
    [
        (400, openai.BadRequestError, "invalid_request_error", None),
        (401, openai.AuthenticationError, "invalid_request_error", "invalid_api_key"),
        (403, openai.PermissionDeniedError, None, None),
        (404, openai.NotFoundError, "invalid_request_error", None),
        (409, openai.ConflictError, None, None),
        (422, openai.UnprocessableEntityError, None, None),
        (429, openai.RateLimitError, None, "rate_limit_exceeded"),
        (500, openai.InternalServerError, "server_error", None),
        (503, openai.InternalServerError, "server_error", None),
        (418, openai.APIStatusError, None, None),
    ],
)
async def test_status_fault(fake, status, exc, etype, code):
    fake.push_fault(Fault("status", status=status, retry_after="7"))
    client = sdk(fake)
    with pytest.raises(exc) as ei:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert ei.value.status_code == status
    assert ei.value.response.headers["retry-after"] == "7"
    err = validate_error(ei.value.response.json())["error"]
    if etype is not None:
        assert err["type"] == etype
    if code is not None:
        assert err["code"] == code
    assert not fake.faults
    # consumed once: the next request is fine, also on the same keep-alive connection
    resp = await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert resp.choices[0].message.content == EXPECTED


@pytest.mark.asyncio
async def test_status_fault_streaming_request_and_custom_body(fake):
    fake.push_fault(Fault("status", status=429))
    fake.push_fault(Fault("status", status=500, body=b'{"error": {"message": "boom"}}'))
    client = sdk(fake)
    with pytest.raises(openai.RateLimitError) as ei:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS, stream=True)
    assert "retry-after" not in ei.value.response.headers
    validate_error(ei.value.response.json())
    with pytest.raises(openai.InternalServerError) as ei:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert ei.value.response.json() == {"error": {"message": "boom"}}


@pytest.mark.asyncio
async def test_fault_queue_fifo_and_header_precedence(fake):
    fake.faults.extend([Fault("status", status=500), Fault("status", status=429)])
    client = sdk(fake)
    with pytest.raises(openai.APIStatusError) as ei:
        await client.chat.completions.create(
            model="gpt-4o",
            messages=MSGS,
            extra_headers={"x-fake-fault": "status", "x-fake-status": "402"},
        )
    assert ei.value.status_code == 402
    assert len(fake.faults) == 2  # header took precedence, queue untouched
    statuses = []
    for _ in range(3):
        try:
            await client.chat.completions.create(model="gpt-4o", messages=MSGS)
            statuses.append(200)
        except openai.APIStatusError as e:
            statuses.append(e.status_code)
    assert statuses == [500, 429, 200]

    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault("nope")
    with pytest.raises(openai.BadRequestError) as ei:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS, extra_headers={"x-fake-fault": "nope"})
    validate_error(ei.value.response.json())


@pytest.mark.asyncio
async def test_html_fault(fake):
    client = sdk(fake)
    with pytest.raises(openai.InternalServerError) as ei:
        await client.chat.completions.create(
            model="gpt-4o",
            messages=MSGS,
            extra_headers={"x-fake-fault": "html", "x-fake-status": "524"},
        )
    assert ei.value.status_code == 524
    assert ei.value.response.headers["content-type"].startswith("text/html")
    assert "Error code 524" in ei.value.response.text


@pytest.mark.asyncio
async def test_reset_fault(fake):
    fake.push_fault(Fault("reset"))
    client = sdk(fake)
    with pytest.raises(openai.APIConnectionError) as ei:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert not isinstance(ei.value, openai.APITimeoutError)
    resp = await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert resp.choices[0].message.content == EXPECTED


@pytest.mark.asyncio
async def test_reset_is_a_tcp_rst(fake):
    reader, writer = await asyncio.open_connection("127.0.0.1", fake.port)
    writer.write(b"GET /v1/models HTTP/1.1\r\nhost: x\r\nx-fake-fault: reset\r\n\r\n")
    with pytest.raises(ConnectionResetError):
        await reader.read(100)
        await reader.read(100)
    await close_writer(writer)


@pytest.mark.asyncio
async def test_hang_fault_and_stop_releases_it():
    server = FakeOpenAI()
    await server.start()
    server.push_fault(Fault("hang"))
    client = sdk(server, timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert 0.25 < time.monotonic() - t0 < 2
    # a raw hanging connection is released by stop()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"GET /v1/models HTTP/1.1\r\nhost: x\r\nx-fake-fault: hang\r\n\r\n")
    await writer.drain()
    read = asyncio.create_task(reader.read())
    await asyncio.sleep(0.05)
    assert not read.done()
    t0 = time.monotonic()
    await server.stop()
    assert time.monotonic() - t0 < 1
    assert await asyncio.wait_for(read, 1) == b""
    await close_writer(writer)
    await close_clients()


@pytest.mark.asyncio
async def test_slow_first_byte(fake):
    fast_timeout = sdk(fake, timeout=0.2)
    fake.push_fault(Fault("slow_first_byte", delay=0.6))
    with pytest.raises(openai.APITimeoutError):
        await fast_timeout.chat.completions.create(model="gpt-4o", messages=MSGS)

    client = sdk(fake)
    t0 = time.monotonic()
    resp = await client.chat.completions.create(
        model="gpt-4o",
        messages=MSGS,
        extra_headers={"x-fake-fault": "slow_first_byte", "x-fake-delay": "0.2"},
    )
    assert time.monotonic() - t0 >= 0.2
    assert resp.choices[0].message.content == EXPECTED


@pytest.mark.asyncio
async def test_stream_cut(fake):
    fake.push_fault(Fault("stream_cut", after_chunks=3))
    client = sdk(fake)
    got = []
    with pytest.raises(STREAM_BROKEN) as ei:
        stream = await client.chat.completions.create(model="gpt-4o", messages=MSGS, stream=True)
        async for chunk in stream:
            got.append(chunk)
    assert not isinstance(ei.value, STREAM_TIMEOUT)
    assert len(got) == 3
    assert all(c.choices[0].finish_reason is None for c in got)

    # raw: no terminating chunk, no [DONE]
    async with raw(fake) as http:
        req = http.build_request(
            "POST",
            "/v1/chat/completions",
            json={"model": "gpt-4o", "messages": MSGS, "stream": True},
            headers={"x-fake-fault": "stream_cut", "x-fake-after-chunks": "2"},
        )
        resp = await http.send(req, stream=True)
        data = b""
        with pytest.raises(httpx.RemoteProtocolError):
            async for part in resp.aiter_bytes():
                data += part
    events = sse_events(data.decode())
    assert len(events) == 2 and "[DONE]" not in events
    for e in events:
        validate_chat_chunk(json.loads(e))


@pytest.mark.asyncio
async def test_stream_cut_non_stream(fake):
    fake.push_fault(Fault("stream_cut"))
    client = sdk(fake)
    with pytest.raises(openai.APIConnectionError) as ei:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert not isinstance(ei.value, openai.APITimeoutError)


@pytest.mark.asyncio
async def test_malformed_json(fake):
    fake.push_fault(Fault("malformed_json"))
    client = sdk(fake)
    with pytest.raises(ValueError):  # json.JSONDecodeError from the SDK's response.json()
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    async with raw(fake) as http:
        r = await http.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o", "messages": MSGS},
            headers={"x-fake-fault": "malformed_json"},
        )
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.content == b'{"id": "x", "choices": ['
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(r.content)


@pytest.mark.asyncio
async def test_malformed_chunk(fake):
    fake.push_fault(Fault("malformed_chunk", after_chunks=2))
    client = sdk(fake)
    got = []
    with pytest.raises(ValueError):  # json.JSONDecodeError
        stream = await client.chat.completions.create(model="gpt-4o", messages=MSGS, stream=True)
        async for chunk in stream:
            got.append(chunk)
    assert len(got) == 2


@pytest.mark.asyncio
async def test_stall(fake):
    client = sdk(fake)
    # idle timeout shorter than the stall: the read times out mid-stream
    short = sdk(fake, timeout=0.2)
    fake.push_fault(Fault("stall", delay=0.8, after_chunks=2))
    got = []
    with pytest.raises(STREAM_TIMEOUT):
        stream = await short.chat.completions.create(model="gpt-4o", messages=MSGS, stream=True)
        async for chunk in stream:
            got.append(chunk)
    assert len(got) == 2
    fake.push_fault(Fault("stall", delay=0.8))
    with pytest.raises(openai.APITimeoutError):  # non-stream: body read times out
        await short.chat.completions.create(model="gpt-4o", messages=MSGS)

    # longer timeout: the stream completes after the pause
    fake.push_fault(Fault("stall", delay=0.3, after_chunks=2))
    stream = await client.chat.completions.create(model="gpt-4o", messages=MSGS, stream=True)
    stamps, text = [], ""
    async for chunk in stream:
        stamps.append(time.monotonic())
        text += chunk.choices[0].delta.content or ""
    assert text == EXPECTED
    gap_index = max(range(1, len(stamps)), key=lambda i: stamps[i] - stamps[i - 1])
    assert gap_index == 2  # the pause comes right after the first two chunks
    assert stamps[2] - stamps[1] >= 0.25

    # non-stream: headers + half the body, pause, the rest
    t0 = time.monotonic()
    resp = await client.chat.completions.create(
        model="gpt-4o",
        messages=MSGS,
        extra_headers={"x-fake-fault": "stall", "x-fake-delay": "0.2"},
    )
    assert time.monotonic() - t0 >= 0.2
    assert resp.choices[0].message.content == EXPECTED


# --------------------------------------------------------------------------- HTTP details


async def _read_response(
    reader: asyncio.StreamReader,
) -> tuple[bytes, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        if line:
            k, _, v = line.partition(":")
            headers[k.lower()] = v.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                break
            body += chunk[:-2]
    else:
        body = await reader.read()
    return lines[0].encode(), headers, body


@pytest.mark.asyncio
async def test_keep_alive_pipelining_and_request_cap():
    async with FakeOpenAI() as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        n = 1005
        writer.write(b"GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n" * n)
        for _ in range(n):
            status, headers, body = await _read_response(reader)
            assert status == b"HTTP/1.1 200 OK"
            assert headers["connection"] == "keep-alive"
        assert orjson.loads(body)["object"] == "list"
        assert len(server.requests) == 1000
        # chunked request body + chunked streaming response on the same connection
        payload = orjson.dumps({"model": "gpt-4o", "messages": MSGS, "stream": True})
        chunked = b"".join(
            b"%x\r\n%b\r\n" % (len(payload[i : i + 10]), payload[i : i + 10]) for i in range(0, len(payload), 10)
        )
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
            + chunked
            + b"0\r\n\r\n"
        )
        status, headers, body = await _read_response(reader)
        assert status == b"HTTP/1.1 200 OK" and headers["transfer-encoding"] == "chunked"
        assert sse_events(body.decode())[-1] == "[DONE]"
        assert server.requests[-1]["json"]["stream"] is True
        assert len(server.requests) == 1000
        await close_writer(writer)

        # HTTP/1.0: close-delimited streaming
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /v1/chat/completions HTTP/1.0\r\ncontent-length: %d\r\n\r\n%b" % (len(payload), payload))
        status, headers, body = await _read_response(reader)
        assert headers["connection"] == "close" and "content-length" not in headers
        events = sse_events(body.decode())
        assert events[-1] == "[DONE]"
        for e in events[:-1]:
            validate_chat_chunk(json.loads(e))
        await close_writer(writer)


@pytest.mark.asyncio
async def test_latency():
    async with FakeOpenAI(latency=0.15) as server:
        client = sdk(server)
        t0 = time.monotonic()
        await asyncio.gather(*(client.chat.completions.create(model="gpt-4o", messages=MSGS) for _ in range(5)))
        assert 0.15 <= time.monotonic() - t0 < 1.0
        await close_clients()


def test_schema_helper_rejects_bad_objects():
    good = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "delta": {"content": "x"},
                "logprobs": None,
                "finish_reason": None,
            }
        ],
        "usage": None,
    }
    validate_chat_chunk(good)
    with pytest.raises(ValidationError):
        validate_chat_chunk({**good, "object": "chat.completion"})
    with pytest.raises(ValidationError):
        validate_chat_chunk({**good, "usage": {"prompt_tokens": "1"}})
    with pytest.raises(ValidationError):
        validate_chat_completion({**good, "object": "chat.completion"})  # choices lack message
    with pytest.raises(ValidationError):
        validate_error({"error": {"message": "x", "type": "y"}})  # param/code are required


@pytest.mark.asyncio
async def test_cli():
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "faregate.testing.fake_openai",
        "--port",
        "0",
        "--model",
        "cli-model",
        stdout=asyncio.subprocess.PIPE,
        env={
            **os.environ,
            "PYTHONPATH": SRC_DIR,
        },
    )
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 10)).decode().strip()
        assert line.startswith("listening on http://127.0.0.1:")
        base = line.removeprefix("listening on ")
        async with httpx.AsyncClient(base_url=base) as http:
            r = await http.get("/v1/models")
        assert "cli-model" in [m["id"] for m in r.json()["data"]]
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 5) == 0
