"""The official SDKs as clients of the gateway, relaying to a Bedrock channel in both key
modes (each test runs with a SigV4 key and with a Bedrock API key, and the fake checks each
request's signature or key): the Anthropic SDK on a Claude model (passed through:
InvokeModel and its event stream re-framed as Server-Sent Events) and on a Converse model
(converted), the OpenAI SDK on both (converted), regular answers, streams and tools; what
reached the fake and what was billed checked each time."""

from __future__ import annotations

import json
from typing import Any

from faregate.testing.logs import consume_logs
from faregate_adapter_anthropic.testing import REPLY_PREFIX as CLAUDE_REPLY
from faregate_adapter_anthropic.testing import TOOL_INPUT as CLAUDE_TOOL_INPUT
from faregate_adapter_bedrock.names import ANTHROPIC_VERSION
from faregate_adapter_bedrock.testing import REPLY_PREFIX as NOVA_REPLY
from faregate_adapter_bedrock.testing import TOOL_INPUT as NOVA_TOOL_INPUT

from .conftest import CLAUDE, CLAUDE_ID, NOVA

WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
OPENAI_WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                                   "parameters": WEATHER["input_schema"]}}


async def test_anthropic_sdk_on_claude_is_passed_through(deployed: Any) -> None:
    deployed.fake.cache_read_tokens, deployed.fake.cache_write_tokens = 300, 40
    client = deployed.anthropic()
    reply = await client.messages.create(model=CLAUDE, max_tokens=256, system="Be brief.",
                                         messages=[{"role": "user", "content": "hello bedrock"}],
                                         extra_headers={"anthropic-beta": "token-efficient-tools-2025-02-19"})
    assert reply.content[0].type == "text" and reply.content[0].text == CLAUDE_REPLY + "hello bedrock"
    assert reply.usage.cache_read_input_tokens == 300 and reply.usage.cache_creation_input_tokens == 40
    (sent,) = deployed.calls()
    assert sent["path"] == f"/model/{CLAUDE_ID}/invoke"
    assert sent["json"]["anthropic_version"] == ANTHROPIC_VERSION and "model" not in sent["json"]
    assert sent["json"]["anthropic_beta"] == ["token-efficient-tools-2025-02-19"]
    assert sent["json"]["system"] == "Be brief."
    (row,) = await consume_logs(deployed.server)
    assert row.model_name == CLAUDE and not row.is_stream
    assert row.prompt_tokens == reply.usage.input_tokens + 340  # cache reads and writes are input too
    assert row.completion_tokens == reply.usage.output_tokens
    other = json.loads(row.other)
    assert other["cache_tokens"] == 300 and other["cache_write_tokens"] == 40


async def test_anthropic_sdk_stream_on_claude(deployed: Any) -> None:
    client = deployed.anthropic()
    async with client.messages.stream(model=CLAUDE, max_tokens=256,
                                      messages=[{"role": "user", "content": "stream from bedrock"}]) as stream:
        text = "".join([t async for t in stream.text_stream])
        final = await stream.get_final_message()
    assert text == CLAUDE_REPLY + "stream from bedrock"
    assert final.stop_reason == "end_turn" and final.usage.output_tokens > 0
    (sent,) = deployed.calls()
    assert sent["path"] == f"/model/{CLAUDE_ID}/invoke-with-response-stream" and "stream" not in sent["json"]
    (row,) = await consume_logs(deployed.server)
    assert row.is_stream and row.completion_tokens == final.usage.output_tokens
    assert row.prompt_tokens == final.usage.input_tokens


async def test_anthropic_sdk_tools_on_claude(deployed: Any) -> None:
    client = deployed.anthropic()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Please call tool for Paris"}]
    first = await client.messages.create(model=CLAUDE, max_tokens=256, tools=[WEATHER], messages=messages)
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert first.stop_reason == "tool_use" and use.input == CLAUDE_TOOL_INPUT
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]}]
    async with client.messages.stream(model=CLAUDE, max_tokens=256, tools=[WEATHER], messages=messages) as stream:
        second = await stream.get_final_message()
    assert second.stop_reason == "end_turn" and second.content[0].type == "text"
    assert len(await consume_logs(deployed.server)) == 2


async def test_openai_sdk_on_claude_is_converted(deployed: Any) -> None:
    client = deployed.openai()
    reply = await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "hi claude"}],
                                                 max_tokens=200)
    assert reply.choices[0].message.content == CLAUDE_REPLY + "hi claude"
    stream = await client.chat.completions.create(
        model=CLAUDE, messages=[{"role": "user", "content": "Please call tool now"}], tools=[OPENAI_WEATHER],
        stream=True, stream_options={"include_usage": True})
    calls: dict[int, dict[str, str]] = {}
    usage = None
    async for chunk in stream:
        usage = chunk.usage or usage
        for delta in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            entry = calls.setdefault(delta.index, {"name": "", "arguments": ""})
            entry["name"] += delta.function.name or "" if delta.function else ""
            entry["arguments"] += delta.function.arguments or "" if delta.function else ""
    assert calls == {0: {"name": "get_weather", "arguments": json.dumps(CLAUDE_TOOL_INPUT, separators=(",", ":"))}}
    first, second = deployed.calls()
    assert first["path"].endswith("/invoke") and second["path"].endswith("/invoke-with-response-stream")
    assert second["json"]["tools"][0]["name"] == "get_weather"
    rows = await consume_logs(deployed.server)
    assert [r.is_stream for r in rows] == [False, True]
    assert usage is not None and rows[1].completion_tokens == usage.completion_tokens


async def test_openai_sdk_on_a_converse_model(deployed: Any) -> None:
    client = deployed.openai()
    reply = await client.chat.completions.create(
        model=NOVA, messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi nova"}],
        max_tokens=100, temperature=0.3, stop=["zzz"])
    assert reply.choices[0].message.content == NOVA_REPLY + "hi nova"
    (sent,) = deployed.calls()
    assert sent["path"] == f"/model/{NOVA}/converse"
    assert sent["json"]["system"] == [{"text": "Be brief."}]
    assert sent["json"]["inferenceConfig"] == {"maxTokens": 100, "temperature": 0.3, "stopSequences": ["zzz"]}
    tools_call = await client.chat.completions.create(
        model=NOVA, messages=[{"role": "user", "content": "Please call tool for me"}], tools=[OPENAI_WEATHER])
    (call,) = tools_call.choices[0].message.tool_calls or []
    assert tools_call.choices[0].finish_reason == "tool_calls" and json.loads(call.function.arguments) == \
        NOVA_TOOL_INPUT
    stream = await client.chat.completions.create(
        model=NOVA, stream=True, stream_options={"include_usage": True}, tools=[OPENAI_WEATHER], messages=[
            {"role": "user", "content": "Please call tool for me"},
            {"role": "assistant", "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "sunny"}])
    text, usage = "", None
    async for chunk in stream:
        usage = chunk.usage or usage
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
    assert text.startswith(NOVA_REPLY)
    last = deployed.calls()[-1]
    assert last["path"] == f"/model/{NOVA}/converse-stream"
    assert last["json"]["messages"][-1]["content"][0]["toolResult"]["content"] == [{"text": "sunny"}]
    rows = await consume_logs(deployed.server)
    assert len(rows) == 3 and rows[2].is_stream
    assert usage is not None and (rows[2].prompt_tokens, rows[2].completion_tokens) == (usage.prompt_tokens,
                                                                                         usage.completion_tokens)


async def test_anthropic_sdk_on_a_converse_model(deployed: Any) -> None:
    deployed.fake.cache_read_tokens = 64
    client = deployed.anthropic()
    reply = await client.messages.create(model=NOVA, max_tokens=128,
                                         messages=[{"role": "user", "content": "converse please"}])
    assert reply.content[0].type == "text" and reply.content[0].text == NOVA_REPLY + "converse please"
    assert reply.usage.cache_read_input_tokens == 64
    async with client.messages.stream(model=NOVA, max_tokens=128,
                                      messages=[{"role": "user", "content": "stream converse"}]) as stream:
        final = await stream.get_final_message()
    assert final.content[0].type == "text" and final.content[0].text == NOVA_REPLY + "stream converse"
    rows = await consume_logs(deployed.server)
    assert rows[0].prompt_tokens == reply.usage.input_tokens + 64
    assert json.loads(rows[0].other)["cache_tokens"] == 64
    assert rows[1].is_stream and rows[1].completion_tokens == final.usage.output_tokens


async def test_responses_and_gemini_clients(deployed: Any) -> None:
    """Every client format converts through the canonical model: OpenAI Responses and Gemini."""
    client = deployed.openai()
    response = await client.responses.create(model=NOVA, input="responses to nova")
    assert response.output_text == NOVA_REPLY + "responses to nova"
    claude = await client.responses.create(model=CLAUDE, input="responses to claude", max_output_tokens=200)
    assert claude.output_text == CLAUDE_REPLY + "responses to claude"
    gemini = deployed.genai()
    answer = await gemini.aio.models.generate_content(model=NOVA, contents="gemini to nova")
    assert answer.text == NOVA_REPLY + "gemini to nova"
    chunks = [c async for c in await gemini.aio.models.generate_content_stream(model=CLAUDE,
                                                                                contents="gemini to claude")]
    assert "".join(c.text or "" for c in chunks) == CLAUDE_REPLY + "gemini to claude"
    assert [c["path"].rsplit("/", 1)[1] for c in deployed.calls()] == ["converse", "invoke", "converse",
                                                                       "invoke-with-response-stream"]
    assert len(await consume_logs(deployed.server)) == 4
