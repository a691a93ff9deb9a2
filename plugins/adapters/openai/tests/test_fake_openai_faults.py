"""Tests for the fake OpenAI server (faregate_adapter_openai.testing): its faults, its
HTTP handling (keep-alive, pipelining, chunked bodies, HTTP/1.0), latency and command
line. The ``fake`` and ``sdk`` fixtures are in conftest.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest

from faregate_adapter_openai.testing import REPLY_PREFIX, FakeOpenAI, Fault
from faregate_adapter_openai.testing.schema import validate_chat_chunk, validate_error

_TRANSPORT: tuple[type[Exception], ...]
_TIMEOUT: tuple[type[Exception], ...]
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
MSGS = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is the capital of France?"},
]
EXPECTED = REPLY_PREFIX + "What is the capital of France?"


def raw(fake: FakeOpenAI, **kw: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=fake.base_url, headers={"authorization": f"Bearer {fake.key}"}, timeout=5,
                             **kw)


def sse_events(text: str) -> list[str]:
    assert text.endswith("\n\n")
    events = text[:-2].split("\n\n")
    for ev in events:
        assert ev.startswith("data: "), ev
    return [ev[len("data: ") :] for ev in events]


async def close_writer(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


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
async def test_status_fault(fake: FakeOpenAI, status: int, exc: type[openai.APIStatusError], etype: str | None,
                            code: str | None, sdk: Any) -> None:
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
async def test_status_fault_streaming_request_and_custom_body(fake: FakeOpenAI, sdk: Any) -> None:
    fake.push_fault(Fault("status", status=429))
    fake.push_fault(Fault("status", status=500, body=b'{"error": {"message": "boom"}}'))
    client = sdk(fake)
    with pytest.raises(openai.RateLimitError) as ei:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS, stream=True)
    assert "retry-after" not in ei.value.response.headers
    validate_error(ei.value.response.json())
    with pytest.raises(openai.InternalServerError) as ei2:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert ei2.value.response.json() == {"error": {"message": "boom"}}


@pytest.mark.asyncio
async def test_fault_queue_fifo_and_header_precedence(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_html_fault(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_reset_fault(fake: FakeOpenAI, sdk: Any) -> None:
    fake.push_fault(Fault("reset"))
    client = sdk(fake)
    with pytest.raises(openai.APIConnectionError) as ei:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert not isinstance(ei.value, openai.APITimeoutError)
    resp = await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert resp.choices[0].message.content == EXPECTED


@pytest.mark.asyncio
async def test_reset_is_a_tcp_rst(fake: FakeOpenAI) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", fake.port)
    writer.write(b"GET /v1/models HTTP/1.1\r\nhost: x\r\nx-fake-fault: reset\r\n\r\n")
    with pytest.raises(ConnectionResetError):
        await reader.read(100)
        await reader.read(100)
    await close_writer(writer)


@pytest.mark.asyncio
async def test_hang_fault_and_stop_releases_it(sdk: Any) -> None:
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


@pytest.mark.asyncio
async def test_slow_first_byte(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_stream_cut(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_stream_cut_non_stream(fake: FakeOpenAI, sdk: Any) -> None:
    fake.push_fault(Fault("stream_cut"))
    client = sdk(fake)
    with pytest.raises(openai.APIConnectionError) as ei:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    assert not isinstance(ei.value, openai.APITimeoutError)


@pytest.mark.asyncio
async def test_malformed_json(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_malformed_chunk(fake: FakeOpenAI, sdk: Any) -> None:
    fake.push_fault(Fault("malformed_chunk", after_chunks=2))
    client = sdk(fake)
    got = []
    with pytest.raises(ValueError):  # json.JSONDecodeError
        stream = await client.chat.completions.create(model="gpt-4o", messages=MSGS, stream=True)
        async for chunk in stream:
            got.append(chunk)
    assert len(got) == 2


@pytest.mark.asyncio
async def test_stall(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_keep_alive_pipelining_and_request_cap() -> None:
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
async def test_latency(sdk: Any) -> None:
    async with FakeOpenAI(latency=0.15) as server:
        client = sdk(server)
        t0 = time.monotonic()
        await asyncio.gather(*(client.chat.completions.create(model="gpt-4o", messages=MSGS) for _ in range(5)))
        assert 0.15 <= time.monotonic() - t0 < 1.0


@pytest.mark.asyncio
async def test_cli() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "faregate_adapter_openai.testing.fake",
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
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 10)).decode().strip()
        assert line.startswith("listening on http://127.0.0.1:")
        base = line.removeprefix("listening on ")
        async with httpx.AsyncClient(base_url=base) as http:
            r = await http.get("/v1/models")
        assert "cli-model" in [m["id"] for m in r.json()["data"]]
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 5) == 0
