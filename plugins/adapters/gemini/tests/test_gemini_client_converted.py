"""Gemini client → OpenAI and Anthropic channels: the native request converted through the
canonical model (checked at the fake upstreams, which validate what they receive), the
answer converted back (checked against Gemini's response schema and with the official
SDK), streams in both framings, function calls, thinking, finish reasons and billing."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.genai import types

from faregate.testing.logs import consume_logs
from faregate_adapter_anthropic.testing import REPLY_PREFIX as ANTHROPIC_REPLY
from faregate_adapter_anthropic.testing import TOOL_INPUT, FakeAnthropic
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_gemini.testing.schema import validate_error, validate_response
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.chat import REPLY_PREFIX as OPENAI_REPLY
from faregate_adapter_openai.testing.chat import TOOL_ARGUMENTS

GPT = "gpt-4o-mini"
CLAUDE = "claude-sonnet-4-5"
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
WEATHER = types.Tool(function_declarations=[types.FunctionDeclaration(
    name="get_weather", description="Weather for a city",
    parameters=types.Schema(type=types.Type.OBJECT, properties={"city": types.Schema(type=types.Type.STRING)},
                            required=["city"]))])
MANUAL = types.AutomaticFunctionCallingConfig(disable=True)


@pytest.fixture
async def openai_channel(deployed: Any, fake_openai: FakeOpenAI) -> FakeOpenAI:
    await deployed.admin.add_channel(base_url=fake_openai.base_url, models=GPT, name="openai")
    return fake_openai


@pytest.fixture
async def anthropic_channel(deployed: Any, fake_anthropic: FakeAnthropic) -> FakeAnthropic:
    await deployed.admin.add_channel(base_url=fake_anthropic.base_url, models=CLAUDE, type=14, name="anthropic",
                                     key=FAKE_ANTHROPIC_KEY)
    return fake_anthropic


# ---- → OpenAI ---------------------------------------------------------------------------


async def test_to_openai_regular(deployed: Any, openai_channel: FakeOpenAI) -> None:
    body = {"systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [{"role": "user", "parts": [{"text": "look at this"},
                                                    {"inlineData": {"mimeType": "image/png", "data": PIXEL}}]}],
            "generationConfig": {"temperature": 0.4, "topP": 0.9, "maxOutputTokens": 300, "stopSequences": ["END"],
                                 "seed": 7, "responseMimeType": "application/json",
                                 "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}}},
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]}
    resp = await deployed.http().post(f"/v1beta/models/{GPT}:generateContent", json=body,
                                      headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 200, resp.text
    answer = validate_response(resp.json())
    assert answer["candidates"][0]["content"]["parts"] == [{"text": OPENAI_REPLY + "look at this"}]
    assert answer["candidates"][0]["finishReason"] == "STOP" and answer["modelVersion"] == GPT
    sent = openai_channel.requests[-1]["json"]
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["messages"][1]["content"][1]["image_url"]["url"] == f"data:image/png;base64,{PIXEL}"
    assert (sent["temperature"], sent["top_p"], sent["max_completion_tokens"], sent["stop"], sent["seed"]) == (
        0.4, 0.9, 300, ["END"], 7)
    assert sent["response_format"]["json_schema"]["schema"] == {"type": "object",
                                                                "properties": {"a": {"type": "string"}}}
    assert "safetySettings" not in sent and "generationConfig" not in sent  # nothing Gemini-only leaks
    (row,) = await consume_logs(deployed.server)
    usage = answer["usageMetadata"]
    assert (row.model_name, row.prompt_tokens, row.completion_tokens) == (
        GPT, usage["promptTokenCount"], usage["candidatesTokenCount"])


@pytest.mark.parametrize("alt", ["sse", "json"])
async def test_to_openai_stream_in_both_framings(deployed: Any, openai_channel: FakeOpenAI, alt: str) -> None:
    resp = await deployed.http().post(f"/v1/models/{GPT}:streamGenerateContent", params={"alt": alt},
                                      json={"contents": [{"parts": [{"text": "stream it"}]}]},
                                      headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 200
    if alt == "sse":
        assert resp.headers["content-type"].startswith("text/event-stream")
        chunks = [json.loads(e[6:]) for e in resp.text.split("\r\n\r\n") if e.startswith("data: ")]
    else:
        assert resp.headers["content-type"].startswith("application/json")
        chunks = resp.json()
    for chunk in chunks:
        validate_response(chunk)
    text = "".join(p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"])
    assert text == OPENAI_REPLY + "stream it"
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    (row,) = await consume_logs(deployed.server)
    assert row.is_stream and row.completion_tokens == chunks[-1]["usageMetadata"]["candidatesTokenCount"] > 0


async def test_to_openai_function_calls_round_trip_with_the_sdk(deployed: Any, openai_channel: FakeOpenAI) -> None:
    config = types.GenerateContentConfig(tools=[WEATHER], automatic_function_calling=MANUAL)
    chat = deployed.genai("v1beta").aio.chats.create(model=GPT, config=config)
    first = await chat.send_message("Please call tool for Paris")
    (call,) = first.function_calls or []
    assert call.name == "get_weather" and call.args == json.loads(TOOL_ARGUMENTS) and call.id
    sent_tool = openai_channel.requests[-1]["json"]["tools"][0]["function"]
    assert sent_tool["parameters"] == {"type": "object", "properties": {"city": {"type": "string"}},
                                       "required": ["city"]}
    second = await chat.send_message(types.Part.from_function_response(name="get_weather", response={"result": "rain"}))
    assert second.text == OPENAI_REPLY + "Please call tool for Paris"
    messages = openai_channel.requests[-1]["json"]["messages"]
    assert messages[1]["tool_calls"][0]["id"] == call.id
    assert messages[2] == {"role": "tool", "tool_call_id": call.id, "content": "rain"}


async def test_to_openai_length_and_thinking(deployed: Any, openai_channel: FakeOpenAI) -> None:
    client = deployed.genai("v1")
    reply = await client.aio.models.generate_content(
        model=GPT, contents="a long question that will be cut",
        config=types.GenerateContentConfig(max_output_tokens=3,
                                           thinking_config=types.ThinkingConfig(thinking_budget=2048)))
    assert reply.candidates and reply.candidates[0].finish_reason == "MAX_TOKENS"
    assert openai_channel.requests[-1]["json"]["reasoning_effort"] == "low"


@pytest.mark.parametrize("body,field", [
    ({"tools": [{"googleSearch": {}}]}, "tools[0].googleSearch"),
    ({"cachedContent": "cachedContents/abc"}, "cachedContent"),
    ({"generationConfig": {"responseModalities": ["IMAGE"]}}, "generationConfig.responseModalities"),
    ({"contents": [{"parts": [{"inlineData": {"mimeType": "application/pdf", "data": PIXEL}}]}]},
     "contents[0].parts[0].inlineData.mimeType"),
    ({"contents": [{"role": "model", "parts": [{"executableCode": {"code": "1", "language": "PYTHON"}}]},
                   {"parts": [{"text": "x"}]}]}, "contents[0].parts[0]"),
])
async def test_what_cannot_convert_is_a_400_naming_it(deployed: Any, openai_channel: FakeOpenAI, body: dict[str, Any],
                                                      field: str) -> None:
    full = {"contents": [{"parts": [{"text": "x"}]}], **body}
    resp = await deployed.http().post(f"/v1beta/models/{GPT}:generateContent", json=full,
                                      headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 400, resp.text
    error = validate_error(resp.json())["error"]
    assert error["details"][0]["fieldViolations"][0]["field"] == field
    assert openai_channel.requests == [] and await consume_logs(deployed.server) == []


# ---- → Anthropic ------------------------------------------------------------------------


async def test_to_anthropic_regular_and_stream_with_the_sdk(deployed: Any, anthropic_channel: FakeAnthropic) -> None:
    anthropic_channel.cache_read_tokens = 12
    client = deployed.genai("v1beta")
    reply = await client.aio.models.generate_content(
        model=CLAUDE, contents="hello claude",
        config=types.GenerateContentConfig(system_instruction="Be kind.", top_k=5, stop_sequences=["ZZZ"]))
    assert reply.text == ANTHROPIC_REPLY + "hello claude"
    sent = anthropic_channel.requests[-1]["json"]
    assert (sent["system"], sent["top_k"], sent["stop_sequences"]) == ("Be kind.", 5, ["ZZZ"])
    usage = reply.usage_metadata
    assert usage is not None and usage.cached_content_token_count == 12
    chunks = [c async for c in await client.aio.models.generate_content_stream(model=CLAUDE, contents="stream")]
    assert "".join(c.text or "" for c in chunks) == ANTHROPIC_REPLY + "stream"
    rows = await consume_logs(deployed.server)
    assert [r.is_stream for r in rows] == [False, True]
    assert rows[0].prompt_tokens == usage.prompt_token_count and json.loads(rows[0].other)["cache_tokens"] == 12


async def test_to_anthropic_stream_as_a_json_array(deployed: Any, anthropic_channel: FakeAnthropic) -> None:
    """Without ``alt=sse`` the stream is one JSON array of chunks, converted from Claude's SSE."""
    resp = await deployed.http().post(f"/v1/models/{CLAUDE}:streamGenerateContent",
                                      json={"contents": [{"parts": [{"text": "stream it"}]}]},
                                      headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/json")
    assert anthropic_channel.requests[-1]["json"]["stream"] is True
    chunks = resp.json()
    assert isinstance(chunks, list) and len(chunks) > 1
    for chunk in chunks:
        validate_response(chunk)
    text = "".join(p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"])
    assert text == ANTHROPIC_REPLY + "stream it"
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    (row,) = await consume_logs(deployed.server)
    usage = chunks[-1]["usageMetadata"]
    assert row.is_stream and (row.prompt_tokens, row.completion_tokens) == (
        usage["promptTokenCount"], usage["candidatesTokenCount"])
    assert row.completion_tokens > 0


async def test_to_anthropic_thinking_and_tools(deployed: Any, anthropic_channel: FakeAnthropic) -> None:
    config = types.GenerateContentConfig(
        tools=[WEATHER], automatic_function_calling=MANUAL, max_output_tokens=4096,
        thinking_config=types.ThinkingConfig(thinking_budget=2000, include_thoughts=True))
    chat = deployed.genai("v1beta").aio.chats.create(model=CLAUDE, config=config)
    first = await chat.send_message("Please call tool for Paris")
    parts = first.candidates[0].content.parts if first.candidates and first.candidates[0].content else []
    assert [bool(p.thought) for p in parts or []] == [True, False]
    assert (first.function_calls or [])[0].args == TOOL_INPUT
    assert anthropic_channel.requests[-1]["json"]["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    # the signed thinking goes back with the tool result (the fake Anthropic checks it)
    second = await chat.send_message(types.Part.from_function_response(name="get_weather", response={"temp": 21}))
    assert second.text and second.text.startswith(ANTHROPIC_REPLY)
    result = anthropic_channel.requests[-1]["json"]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and json.loads(result["content"]) == {"temp": 21}


async def test_prompt_blocks_and_errors_stay_in_geminis_shape(deployed: Any, anthropic_channel: FakeAnthropic) -> None:
    anthropic_channel.fail_next(429, "slow down")
    resp = await deployed.http().post(f"/v1beta/models/{CLAUDE}:generateContent",
                                      json={"contents": [{"parts": [{"text": "x"}]}]},
                                      headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 429
    error = validate_error(resp.json())["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED" and "slow down" in error["message"]
