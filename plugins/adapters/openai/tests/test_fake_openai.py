"""Tests for the fake OpenAI server (faregate_adapter_openai.testing): what it answers,
driven by the official ``openai`` SDK (its faults and HTTP handling: test_fake_openai_faults.py).

Every regular response, stream chunk and error body seen on the wire is validated
against OpenAI's official OpenAPI spec (faregate_adapter_openai.testing.schema). The
``fake`` and ``sdk`` fixtures are in conftest.py.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from faregate_adapter_openai.testing import REPLY_PREFIX, FakeOpenAI
from faregate_adapter_openai.testing.schema import (
    ValidationError,
    validate_chat_chunk,
    validate_chat_completion,
    validate_error,
)

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


def raw(fake: FakeOpenAI, **kw: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=fake.base_url, headers={"authorization": f"Bearer {fake.key}"}, timeout=5,
                             **kw)


def sse_events(text: str) -> list[str]:
    assert text.endswith("\n\n")
    events = text[:-2].split("\n\n")
    for ev in events:
        assert ev.startswith("data: "), ev
    return [ev[len("data: ") :] for ev in events]


def expected_prompt_tokens(messages: list[dict[str, str]]) -> int:
    return sum(max(1, len(m["content"]) // 4) + 3 for m in messages)


# --------------------------------------------------------------------------- regular


@pytest.mark.asyncio
async def test_regular_completion(fake: FakeOpenAI, sdk: Any) -> None:
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
    assert rec["headers"]["authorization"] == f"Bearer {fake.key}"
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
async def test_long_message_truncated_and_multipart_content(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_max_tokens_truncates(fake: FakeOpenAI, param: str, sdk: Any) -> None:
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
async def test_stream_with_usage(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_stream_without_usage(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_tool_call_regular(fake: FakeOpenAI, text: str, tool_choice: Any, name: str, sdk: Any) -> None:
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
async def test_no_tool_call_without_trigger_or_after_tool_result(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_tool_call_streaming(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_models(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_auth(fake: FakeOpenAI, sdk: Any) -> None:
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
async def test_request_errors(fake: FakeOpenAI, method: str, path: str, content: bytes | None, status: int,
                              param: str | None) -> None:
    async with raw(fake) as http:
        r = await http.request(method, path, content=content)
    assert r.status_code == status
    assert r.headers["content-type"] == "application/json"
    err = validate_error(r.json())["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == param


def test_schema_helper_rejects_bad_objects() -> None:
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


async def test_the_spec_is_loaded_before_the_fake_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake reads OpenAI's document (about a second of CPU) at its start, not on its first
    request: a client's first request waited for it, and timed out under load."""
    from faregate_adapter_openai.testing.schema import SPEC

    for cached in ("document", "registry"):  # as in a process that has not read it yet
        monkeypatch.delitem(SPEC.__dict__, cached, raising=False)
    async with FakeOpenAI():
        assert "document" in SPEC.__dict__ and "registry" in SPEC.__dict__
    monkeypatch.delitem(SPEC.__dict__, "document", raising=False)
    async with FakeOpenAI(validate_requests=False):  # a fake that checks nothing loads nothing
        assert "document" not in SPEC.__dict__
