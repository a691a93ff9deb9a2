"""Clients of the OpenAI and Anthropic formats (their official SDKs) on a Cohere channel:
what goes up to Cohere's v2 Chat API (checked by the fake against Cohere's published
schema), what comes back converted, streams, tools and tool results, thinking, images,
errors, and the bill on Cohere's billed units."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from faregate_adapter_cohere.testing import (
    CHAT_MODEL,
    REPLY_PREFIX,
    TEMPLATE_TOKENS,
    THINKING_PREFIX,
    TOOL_ARGUMENTS,
    TOOL_REPLY_PREFIX,
    words,
)

CHAT = CHAT_MODEL
Deployment = Any  # conftest's Deployment: a gateway, the fake Cohere, a key, SDK clients

TOOLS: list[Any] = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def expected_quota(deployment: Deployment, prompt: int, completion: int) -> int:
    ratio, completion_ratio = deployment.ratios[CHAT]
    return max(1, round((prompt + completion * completion_ratio) * ratio))


async def test_openai_chat_is_converted_and_billed_on_billed_units(deployment: Deployment) -> None:
    reply = await deployment.openai().chat.completions.create(
        model=CHAT, messages=[{"role": "system", "content": "Be brief."},
                              {"role": "developer", "content": "Answer in English."},
                              {"role": "user", "content": "hello there cohere"}],
        temperature=1.7, top_p=1.0, max_tokens=50, stop=["NEVER"], seed=7, frequency_penalty=-1, user="u-1")
    assert reply.choices[0].message.content == REPLY_PREFIX + "hello there cohere"
    assert reply.choices[0].finish_reason == "stop"
    sent = deployment.fake.requests[-1]
    assert sent["path"] == "/v2/chat" and sent["headers"]["authorization"] == "Bearer co-upstream-key"
    # Cohere's ranges: temperature 0-1, p 0.01-0.99, penalties 0-1; no user field
    assert sent["json"] == {"model": CHAT, "messages": [
        {"role": "system", "content": "Be brief.\n\nAnswer in English."},
        {"role": "user", "content": "hello there cohere"}],
        "max_tokens": 50, "stop_sequences": ["NEVER"], "temperature": 1.0, "p": 0.99, "seed": 7,
        "frequency_penalty": 0.0}
    # the fake bills a token a word and one a message
    billed_in = words("Be brief.\n\nAnswer in English.") + 1 + words("hello there cohere") + 1
    billed_out = words(REPLY_PREFIX + "hello there cohere")
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (billed_in, billed_out)
    (row,) = await deployment.consume_logs()
    # billed_units, not the raw tokens (which count Cohere's prompt template too)
    assert (row.prompt_tokens, row.completion_tokens) == (billed_in, billed_out) != (billed_in + TEMPLATE_TOKENS, 0)
    assert row.quota == expected_quota(deployment, billed_in, billed_out)
    assert json.loads(row.other)["usage_source"] == "upstream"


async def test_openai_stream_is_converted_and_billed(deployment: Deployment) -> None:
    stream = await deployment.openai().chat.completions.create(
        model=CHAT, messages=[{"role": "user", "content": "stream me some words"}], stream=True,
        stream_options={"include_usage": True})
    text, usage, finish = "", None, None
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        usage = chunk.usage or usage
    assert text == REPLY_PREFIX + "stream me some words" and finish == "stop"
    assert deployment.fake.requests[-1]["json"]["stream"] is True
    assert usage is not None and usage.completion_tokens == words(text)
    (row,) = await deployment.consume_logs()
    assert row.is_stream and (row.prompt_tokens, row.completion_tokens) == (usage.prompt_tokens, words(text))


async def test_tool_call_and_tool_result_round_trip(deployment: Deployment) -> None:
    client = deployment.openai()
    first = await client.chat.completions.create(
        model=CHAT, messages=[{"role": "user", "content": "call tool for Paris weather"}], tools=TOOLS,
        tool_choice="required", parallel_tool_calls=False)
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    (call,) = message.tool_calls or []
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == TOOL_ARGUMENTS
    sent = deployment.fake.requests[-1]["json"]
    assert sent["tool_choice"] == "REQUIRED"
    assert sent["tools"] == [{"type": "function", "function": {"name": "get_weather", **{
        k: v for k, v in TOOLS[0]["function"].items() if k != "name"}}}]
    # the plan Cohere wrote before the call reaches an OpenAI client as reasoning
    assert getattr(message, "reasoning_content", None) == "I will call get_weather."
    second = await client.chat.completions.create(model=CHAT, tools=TOOLS, messages=[
        {"role": "user", "content": "call tool for Paris weather"},
        {"role": "assistant", "content": None, "reasoning_content": "I will call get_weather.",
         "tool_calls": [{"id": call.id, "type": "function",
                         "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 degrees"}])
    assert second.choices[0].message.content == TOOL_REPLY_PREFIX + "sunny, 21 degrees"
    sent = deployment.fake.requests[-1]["json"]
    assert sent["messages"][1:] == [
        {"role": "assistant", "tool_plan": "I will call get_weather.",
         "tool_calls": [{"id": call.id, "type": "function",
                         "function": {"name": "get_weather", "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 degrees"}]
    assert "tool_choice" not in sent  # auto: Cohere's default


async def test_streamed_tool_call(deployment: Deployment) -> None:
    stream = await deployment.openai().chat.completions.create(
        model=CHAT, messages=[{"role": "user", "content": "weather?"}], tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_weather"}}, stream=True)
    calls: dict[int, dict[str, str]] = {}
    reasoning, finish = "", None
    async for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        reasoning += getattr(delta, "reasoning_content", None) or ""
        for tc in delta.tool_calls or []:
            entry = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] += tc.id or ""
            entry["name"] += (tc.function.name if tc.function else None) or ""
            entry["arguments"] += (tc.function.arguments if tc.function else None) or ""
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls" and reasoning == "I will call get_weather."
    assert list(calls) == [0] and calls[0]["name"] == "get_weather" and calls[0]["id"]
    assert json.loads(calls[0]["arguments"]) == TOOL_ARGUMENTS
    assert deployment.fake.requests[-1]["json"]["tool_choice"] == "REQUIRED"  # a named choice: that tool, required


async def test_reasoning_effort_turns_thinking_on(deployment: Deployment) -> None:
    reply = await deployment.openai().chat.completions.create(
        model=CHAT, messages=[{"role": "user", "content": "think hard"}], reasoning_effort="low")
    assert deployment.fake.requests[-1]["json"]["thinking"] == {"type": "enabled", "token_budget": 2048}
    message = reply.choices[0].message
    assert getattr(message, "reasoning_content", None) == THINKING_PREFIX + "think hard"
    assert message.content == REPLY_PREFIX + "think hard"


async def test_images_go_up_as_image_url_parts(deployment: Deployment) -> None:
    data = "data:image/png;base64,iVBORw0KGgo="
    await deployment.openai().chat.completions.create(model=CHAT, messages=[{"role": "user", "content": [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": data, "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}])
    assert deployment.fake.requests[-1]["json"]["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": data, "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}]


async def test_anthropic_client_regular_and_stream(deployment: Deployment) -> None:
    client = deployment.anthropic()
    message = await client.messages.create(model=CHAT, max_tokens=64, system="Be brief.",
                                           messages=[{"role": "user", "content": "hello from claude land"}])
    assert message.content[0].type == "text" and message.content[0].text == REPLY_PREFIX + "hello from claude land"
    assert message.stop_reason == "end_turn" and message.usage.output_tokens == words(message.content[0].text)
    sent = deployment.fake.requests[-1]["json"]
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."} and sent["max_tokens"] == 64
    async with client.messages.stream(model=CHAT, max_tokens=3,
                                      messages=[{"role": "user", "content": "one two three four"}]) as stream:
        text = "".join([chunk async for chunk in stream.text_stream])
        final = await stream.get_final_message()
    assert text == " ".join((REPLY_PREFIX + "one two three four").split()[:3])
    assert final.stop_reason == "max_tokens"  # Cohere's MAX_TOKENS
    rows = await deployment.consume_logs()
    assert len(rows) == 2 and rows[1].is_stream and rows[1].completion_tokens == 3


async def test_anthropic_tool_use_through_cohere(deployment: Deployment) -> None:
    message = await deployment.anthropic().messages.create(
        model=CHAT, max_tokens=128, tool_choice={"type": "any"},
        tools=[{"name": "get_weather", "input_schema": TOOLS[0]["function"]["parameters"]}],
        messages=[{"role": "user", "content": "weather in Paris"}])
    assert message.stop_reason == "tool_use"
    tool_use = next(b for b in message.content if b.type == "tool_use")
    assert tool_use.name == "get_weather" and tool_use.input == TOOL_ARGUMENTS


async def test_n_above_one_is_refused_before_any_upstream_call(deployment: Deployment) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await deployment.openai().chat.completions.create(model=CHAT, n=2,
                                                          messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["param"] == "n"  # type: ignore[index]
    assert deployment.fake.requests == []


async def test_upstream_errors_reach_the_client_redacted(deployment: Deployment) -> None:
    client = deployment.openai()
    deployment.fake.fail_next(429, "slow down, key co-upstream-key")
    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": "hi"}])
    assert "slow down" in caught.value.message and "co-upstream-key" not in caught.value.message
    deployment.fake.fail_next(498, "invalid api token")  # Cohere's code for a dead or deny-listed key
    with pytest.raises(openai.AuthenticationError):
        await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": "hi"}])
    assert await deployment.consume_logs() == []


async def test_safety_mode_channel_setting(deployment: Deployment) -> None:
    await deployment.admin.ok("PUT", "/api/channel/", json={"id": deployment.channel,
                                                            "setting": json.dumps({"safety_mode": "STRICT"})})
    await deployment.openai().chat.completions.create(model=CHAT, messages=[{"role": "user", "content": "hi"}])
    assert deployment.fake.requests[-1]["json"]["safety_mode"] == "STRICT"
