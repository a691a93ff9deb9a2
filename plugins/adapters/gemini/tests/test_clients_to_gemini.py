"""OpenAI and Anthropic clients → a Gemini channel: their requests converted to Gemini's
(checked at the fake Gemini, which validates what it receives against Gemini's schema),
Gemini's answers converted back (checked by the official SDKs, the Anthropic one in strict
mode), streams, tools, thinking, structured output, safety, finish reasons and billing."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from faregate.testing.logs import consume_logs
from faregate_adapter_gemini.config import DEFAULT_SAFETY_THRESHOLD, HARM_CATEGORIES
from faregate_adapter_gemini.parts import SKIP_SIGNATURE
from faregate_adapter_gemini.testing import (
    FLASH,
    GEMINI_3,
    PRO,
    REPLY_PREFIX,
    THOUGHT_PREFIX,
    TOOL_ARGS,
    UNSAFE_OUTPUT,
    UNSAFE_PROMPT,
    signature_for,
)
from faregate_adapter_gemini.testing.fixtures import FAKE_GEMINI_KEY

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                            "parameters": {"type": "object",
                                                           "properties": {"city": {"type": "string"}}}}}
CLAUDE_WEATHER = {"name": "get_weather", "description": "Weather for a city",
                  "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def sent(deployed: Any) -> dict[str, Any]:
    body: dict[str, Any] = deployed.fake.requests[-1]["json"]
    return body


# ---- OpenAI client ------------------------------------------------------------------------


async def test_openai_regular_and_stream(deployed: Any) -> None:
    client = deployed.openai()
    reply = await client.chat.completions.create(
        model=FLASH, messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi gemini"}],
        temperature=0.3, max_completion_tokens=200, stop=["STOP1"], seed=5)
    assert reply.choices[0].message.content == REPLY_PREFIX + "hi gemini"
    assert reply.choices[0].finish_reason == "stop" and reply.usage and reply.usage.prompt_tokens > 0
    body = sent(deployed)
    assert deployed.fake.requests[-1]["path"] == f"/v1beta/models/{FLASH}:generateContent"
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi gemini"}]}]
    assert body["generationConfig"] == {"temperature": 0.3, "maxOutputTokens": 200, "stopSequences": ["STOP1"],
                                        "seed": 5}
    assert body["safetySettings"] == [{"category": c, "threshold": DEFAULT_SAFETY_THRESHOLD} for c in HARM_CATEGORIES]
    stream = await client.chat.completions.create(model=FLASH, messages=[{"role": "user", "content": "stream me"}],
                                                  stream=True, stream_options={"include_usage": True})
    text, usage, finish = "", None, None
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        usage = chunk.usage or usage
    assert text == REPLY_PREFIX + "stream me" and finish == "stop" and usage is not None
    assert deployed.fake.requests[-1]["query"] == {"alt": "sse"}
    rows = await consume_logs(deployed.server)
    assert [r.is_stream for r in rows] == [False, True]
    assert (rows[1].prompt_tokens, rows[1].completion_tokens) == (usage.prompt_tokens, usage.completion_tokens)


async def test_openai_tools_round_trip(deployed: Any) -> None:
    client = deployed.openai()
    messages: list[Any] = [{"role": "user", "content": "Please call tool for Paris"}]
    first = await client.chat.completions.create(model=FLASH, messages=messages, tools=[WEATHER],
                                                 tool_choice="auto")
    (call,) = first.choices[0].message.tool_calls or []
    assert first.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == TOOL_ARGS
    declaration = sent(deployed)["tools"][0]["functionDeclarations"][0]
    assert declaration["parametersJsonSchema"] == WEATHER["function"]["parameters"]
    assert sent(deployed)["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
    second = await client.chat.completions.create(model=FLASH, messages=messages, tools=[WEATHER])
    assert second.choices[0].message.content == REPLY_PREFIX + "Please call tool for Paris"
    turns = sent(deployed)["contents"]
    assert turns[1]["parts"][0]["functionCall"] == {"name": "get_weather", "args": TOOL_ARGS, "id": call.id}
    assert turns[2] == {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "id": call.id,
                                                                         "response": {"result": "sunny"}}}]}
    forced = await client.chat.completions.create(model=FLASH, messages=[{"role": "user", "content": "x"}],
                                                  tools=[WEATHER],
                                                  tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert forced.choices[0].message.tool_calls
    assert sent(deployed)["toolConfig"] == {"functionCallingConfig": {"mode": "ANY",
                                                                      "allowedFunctionNames": ["get_weather"]}}


async def test_openai_streamed_tool_calls(deployed: Any) -> None:
    stream = await deployed.openai().chat.completions.create(
        model=FLASH, messages=[{"role": "user", "content": "call tool now"}], tools=[WEATHER], stream=True)
    calls: dict[int, dict[str, str]] = {}
    finish = None
    async for chunk in stream:
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            entry = calls.setdefault(delta.index, {"name": "", "arguments": ""})
            entry["name"] += delta.function.name or "" if delta.function else ""
            entry["arguments"] += delta.function.arguments or "" if delta.function else ""
        if chunk.choices and chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
    assert finish == "tool_calls" and calls[0]["name"] == "get_weather"
    assert json.loads(calls[0]["arguments"]) == TOOL_ARGS


async def test_openai_reasoning_structured_output_and_billing(deployed: Any, ratios: Any) -> None:
    deployed.fake.cached_tokens = 30
    await deployed.admin.set_option("CacheRatio", {FLASH: 0.25})
    schema = {"type": "object", "properties": {"reply": {"type": "string"}}, "required": ["reply"]}
    reply = await deployed.openai().chat.completions.create(
        model=FLASH, messages=[{"role": "user", "content": "answer in json"}], reasoning_effort="medium",
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": schema}})
    config = sent(deployed)["generationConfig"]
    assert config["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 8192}
    assert (config["responseMimeType"], config["responseJsonSchema"]) == ("application/json", schema)
    content = reply.choices[0].message.content or ""
    assert json.loads(content)["reply"] == REPLY_PREFIX + "answer in json"
    message = reply.choices[0].message.model_dump()
    assert message["reasoning_content"] == THOUGHT_PREFIX + "answer in json"
    assert reply.usage is not None and reply.usage.completion_tokens_details is not None
    thoughts = reply.usage.completion_tokens_details.reasoning_tokens
    assert thoughts and thoughts > 0
    assert reply.usage.prompt_tokens_details and reply.usage.prompt_tokens_details.cached_tokens == 30
    (row,) = await consume_logs(deployed.server)
    assert row.completion_tokens == reply.usage.completion_tokens
    assert json.loads(row.other)["reasoning_tokens"] == thoughts
    # new-api's charge: the cached part of the prompt at the cache ratio, the thoughts as output
    ratio, completion = ratios[FLASH]
    assert row.quota == round((reply.usage.prompt_tokens - 30 + 30 * 0.25 + reply.usage.completion_tokens * completion)
                              * ratio)


async def test_gemini_3_calls_get_a_signature_they_lack(deployed: Any) -> None:
    """An OpenAI client's tool-call history without Gemini's signature still works on
    Gemini 3: the call gets the documented placeholder (the fake refuses a turn without one)."""
    messages = [{"role": "user", "content": "what is the weather?"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                                                                        "function": {"name": "get_weather",
                                                                                     "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    reply = await deployed.openai().chat.completions.create(model=GEMINI_3, messages=messages, tools=[WEATHER])
    assert reply.choices[0].message.content
    assert sent(deployed)["contents"][1]["parts"][0]["thoughtSignature"] == SKIP_SIGNATURE


@pytest.mark.parametrize("content,finish", [(UNSAFE_OUTPUT, "content_filter"), (UNSAFE_PROMPT, "content_filter")])
async def test_safety_stops_are_content_filter(deployed: Any, content: str, finish: str) -> None:
    reply = await deployed.openai().chat.completions.create(model=FLASH, messages=[{"role": "user",
                                                                                    "content": content}])
    assert reply.choices[0].finish_reason == finish


async def test_length_stop_and_unconvertible_requests(deployed: Any) -> None:
    client = deployed.openai()
    cut = await client.chat.completions.create(model=FLASH, messages=[{"role": "user", "content": "long " * 30}],
                                               max_completion_tokens=2)
    assert cut.choices[0].finish_reason == "length"
    for kwargs, field in (({"n": 2}, "n"), ({"stop": ["a", "b", "c", "d", "e", "f"]}, "stop")):
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(model=FLASH, messages=[{"role": "user", "content": "x"}], **kwargs)
        assert isinstance(refused.value.body, dict) and refused.value.body["param"] == field
    assert len(deployed.fake.requests) == 1


async def test_a_channels_safety_threshold(deployed: Any) -> None:
    await deployed.admin.add_channel(base_url=deployed.fake.base_url, type=24, key=FAKE_GEMINI_KEY, name="quiet",
                                     models="gemini-quiet", model_mapping=json.dumps({"gemini-quiet": FLASH}),
                                     setting=json.dumps({"safety_threshold": ""}))
    await deployed.admin.set_option("ModelRatio", {"gemini-quiet": 0.1})
    await deployed.openai().chat.completions.create(model="gemini-quiet", messages=[{"role": "user", "content": "x"}])
    assert "safetySettings" not in sent(deployed)


# ---- Anthropic client ---------------------------------------------------------------------


async def test_anthropic_regular_stream_tools_and_thinking(deployed: Any) -> None:
    client = deployed.anthropic()
    reply = await client.messages.create(model=PRO, max_tokens=512, system="Be brief.",
                                         messages=[{"role": "user", "content": "hello gemini"}])
    assert reply.content[0].type == "text" and reply.content[0].text == REPLY_PREFIX + "hello gemini"
    assert reply.stop_reason == "end_turn"
    assert sent(deployed)["generationConfig"]["maxOutputTokens"] == 512
    async with client.messages.stream(model=PRO, max_tokens=512,
                                      messages=[{"role": "user", "content": "stream it"}]) as stream:
        text = "".join([t async for t in stream.text_stream])
        final = await stream.get_final_message()
    assert text == REPLY_PREFIX + "stream it" and final.usage.output_tokens > 0

    thinking = {"type": "enabled", "budget_tokens": 1024}
    messages: list[Any] = [{"role": "user", "content": "Please call tool for Paris"}]
    first = await client.messages.create(model=PRO, max_tokens=4096, thinking=thinking, tools=[CLAUDE_WEATHER],
                                         messages=messages)
    # Gemini's thought, then its signature (which came on the call: a block of its own so it
    # goes back onto the call), then the call
    assert [b.type for b in first.content] == ["thinking", "thinking", "tool_use"]
    assert first.stop_reason == "tool_use"
    assert sent(deployed)["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 1024}
    thought, signed, tool_use = first.content
    assert isinstance(thought, anthropic.types.ThinkingBlock) and isinstance(signed, anthropic.types.ThinkingBlock)
    assert thought.thinking == THOUGHT_PREFIX + "Please call tool for Paris" and not signed.thinking
    assert signed.signature == signature_for(THOUGHT_PREFIX + "Please call tool for Paris")
    assert isinstance(tool_use, anthropic.types.ToolUseBlock) and tool_use.input == TOOL_ARGS
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "rain"}]}]
    second = await client.messages.create(model=PRO, max_tokens=4096, thinking=thinking, tools=[CLAUDE_WEATHER],
                                          messages=messages)
    assert second.content[-1].type == "text"
    model_turn = sent(deployed)["contents"][1]["parts"]
    assert model_turn[0] == {"text": thought.thinking, "thought": True}
    assert model_turn[1]["functionCall"]["name"] == "get_weather"
    assert model_turn[1]["thoughtSignature"] == signed.signature  # back where Gemini put it
    rows = await consume_logs(deployed.server)
    assert len(rows) == 4 and rows[2].completion_tokens == first.usage.output_tokens


async def test_anthropic_disabled_thinking_on_a_pro_model_is_the_upstreams_400(deployed: Any) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        await deployed.anthropic().messages.create(model=PRO, max_tokens=64, thinking={"type": "disabled"},
                                                   messages=[{"role": "user", "content": "x"}])
    assert "thinking mode" in str(refused.value.message)
    assert sent(deployed)["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 0}
