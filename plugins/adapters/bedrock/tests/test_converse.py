"""Converse conversions, each body checked as the fake (and Bedrock) check it: the
canonical request as a Converse body (system, alternating turns, images as bytes, tool ids
and names made to fit, tools declared whenever tool blocks are used, cache points), a
Converse answer and its stream events back, usage with the cache counted as input, and
Claude's stream events unwrapped from their ``chunk`` events."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from faregate.api import (
    ChatRequest,
    GatewayError,
    ImagePart,
    Message,
    ReasoningDelta,
    ReasoningPart,
    StreamError,
    StreamStop,
    TextDelta,
    TextPart,
    Tool,
    ToolCallDelta,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    Usage,
    UsageEvent,
    parse_sse_event,
)
from faregate_adapter_bedrock.converse_requests import render_request
from faregate_adapter_bedrock.converse_responses import parse_response, parse_usage
from faregate_adapter_bedrock.streams import BedrockStreamParser, ChunkPassthrough, ConverseStreamParser
from faregate_adapter_bedrock.testing import converse_answers
from faregate_adapter_bedrock.testing.converse_schema import request_problem

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()
WEATHER = Tool(name="get.weather", description="The weather.", parameters={"type": "object", "properties": {
    "city": {"type": "string"}}})


def _valid(body: dict[str, Any]) -> dict[str, Any]:
    assert request_problem(body) is None, request_problem(body)
    converse_answers.check_rules(body)
    return body


def test_a_conversation_with_tools_images_and_cache_points() -> None:
    req = ChatRequest(model="m", max_tokens=100, temperature=1.7, top_p=0.9, stop=["END"], tools=[WEATHER],
                      tool_choice=ToolChoice(mode="tool", name="get.weather"), messages=[
        Message("system", [TextPart("Be brief.", cache_control={"type": "ephemeral"})]),
        Message("user", [TextPart("look"), ImagePart(data=PNG, media_type="image/png")]),
        Message("assistant", [TextPart(""), ToolCallPart(id="functions.get:0", name="get.weather",
                                                         arguments='{"city": "Paris"}')]),
        Message("tool", [ToolResultPart(tool_call_id="functions.get:0", content=[TextPart("sunny")])]),
        Message("user", [TextPart("and now?")]),
    ])
    body = _valid(render_request(req))
    assert body["system"] == [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]  # the tool result and text merged
    assert body["messages"][0]["content"][1] == {"image": {"format": "png", "source": {"bytes": PNG}}}
    use = body["messages"][1]["content"][0]["toolUse"]
    result = body["messages"][2]["content"][0]["toolResult"]
    assert use["toolUseId"] == result["toolUseId"] == "functions_get_0" and use["name"] == "get_weather"
    assert use["input"] == {"city": "Paris"}
    assert body["inferenceConfig"] == {"maxTokens": 100, "temperature": 1.0, "topP": 0.9, "stopSequences": ["END"]}
    assert body["toolConfig"]["toolChoice"] == {"tool": {"name": "get_weather"}}


def test_tools_are_declared_when_the_history_uses_them() -> None:
    req = ChatRequest(model="m", messages=[
        Message("user", [TextPart("hi")]),
        Message("assistant", [ToolCallPart(id="c1", name="lookup", arguments="{}")]),
        Message("tool", [ToolResultPart(tool_call_id="c1", content=[], is_error=True)]),
    ])
    body = _valid(render_request(req))
    assert body["toolConfig"] == {"tools": [{"toolSpec": {"name": "lookup", "inputSchema": {"json": {
        "type": "object"}}}}]}
    assert body["messages"][2]["content"][0]["toolResult"] == {"toolUseId": "c1", "content": [{"json": {}}],
                                                               "status": "error"}
    none = render_request(ChatRequest(model="m", tools=[WEATHER], tool_choice=ToolChoice(mode="none"),
                                      messages=[Message("user", [TextPart("hi")])]))
    assert "toolConfig" not in _valid(none)


def test_signed_reasoning_goes_back_unsigned_does_not() -> None:
    body = render_request(ChatRequest(model="m", messages=[
        Message("user", [TextPart("think")]),
        Message("assistant", [ReasoningPart(text="hmm", signature="sig"), ReasoningPart(text="unsigned"),
                              TextPart("done")]),
        Message("user", [TextPart("again")])]))
    assert _valid(body)["messages"][1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "sig"}}}, {"text": "done"}]


@pytest.mark.parametrize(("req", "param"), [
    (ChatRequest(model="m", messages=[Message("user", [ImagePart(url="https://x.example/a.png")])]), "messages[0]"),
    (ChatRequest(model="m", messages=[Message("user", [ImagePart(data=PNG, media_type="image/tiff")])]),
     "messages[0]"),
    (ChatRequest(model="m", stop=["a", "b", "c", "d", "e"], messages=[Message("user", [TextPart("x")])]), "stop"),
    (ChatRequest(model="m", messages=[Message("system", [TextPart("only")])]), "messages"),
])
def test_what_converse_cannot_take_is_a_400_naming_the_field(req: ChatRequest, param: str) -> None:
    with pytest.raises(GatewayError) as refused:
        render_request(req)
    assert refused.value.status == 400 and refused.value.param == param


def test_an_answer_and_its_usage() -> None:
    answer = {"output": {"message": {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "s1"}}}, {"text": "Hi"},
        {"toolUse": {"toolUseId": "t1", "name": "f", "input": {"a": 1}}}]}}, "stopReason": "tool_use",
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 1015, "cacheReadInputTokens": 900,
                  "cacheWriteInputTokens": 100}, "metrics": {"latencyMs": 1}}
    reply = parse_response(answer)
    assert reply.stop_reason == "tool_calls" and reply.usage == Usage(
        input_tokens=1010, output_tokens=5, cache_read_tokens=900, cache_write_tokens=100)
    reasoning, text, call = reply.message.content
    assert isinstance(reasoning, ReasoningPart) and reasoning.signature == "s1"
    assert isinstance(text, TextPart) and text.text == "Hi"
    assert isinstance(call, ToolCallPart) and json.loads(call.arguments) == {"a": 1}
    assert parse_usage({"inputTokens": 3, "outputTokens": 2}) == Usage(input_tokens=3, output_tokens=2)


def test_converse_stream_events() -> None:
    parser = ConverseStreamParser()
    events = [("messageStart", {"role": "assistant"}),
              ("contentBlockDelta", {"delta": {"reasoningContent": {"text": "hm"}}, "contentBlockIndex": 0}),
              ("contentBlockDelta", {"delta": {"reasoningContent": {"signature": "s"}}, "contentBlockIndex": 0}),
              ("contentBlockDelta", {"delta": {"text": "Hi"}, "contentBlockIndex": 1}),
              ("contentBlockStart", {"start": {"toolUse": {"toolUseId": "t1", "name": "f"}}, "contentBlockIndex": 2}),
              ("contentBlockDelta", {"delta": {"toolUse": {"input": '{"a":'}}, "contentBlockIndex": 2}),
              ("contentBlockDelta", {"delta": {"toolUse": {"input": "1}"}}, "contentBlockIndex": 2}),
              ("contentBlockStop", {"contentBlockIndex": 2}),
              ("messageStop", {"stopReason": "tool_use"}),
              ("metadata", {"usage": {"inputTokens": 4, "outputTokens": 6, "cacheReadInputTokens": 2}, "p": "ab"})]
    out = [e for name, payload in events for e in parser.feed(name, json.dumps(payload).encode())]
    assert out[1:] == [ReasoningDelta(index=0, text="hm"), ReasoningDelta(index=0, signature="s"),
                       TextDelta(index=1, text="Hi"), ToolCallDelta(index=2, tool_index=0, id="t1", name="f"),
                       ToolCallDelta(index=2, tool_index=0, arguments='{"a":'),
                       ToolCallDelta(index=2, tool_index=0, arguments="1}"), StreamStop(stop_reason="tool_calls"),
                       UsageEvent(Usage(input_tokens=6, output_tokens=6, cache_read_tokens=2))]
    assert parser.done


def _chunk(event: dict[str, Any]) -> bytes:
    return json.dumps({"bytes": base64.b64encode(json.dumps(event).encode()).decode(), "p": "xyz"}).encode()


CLAUDE_EVENTS = [
    {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "c",
                                          "content": [], "stop_reason": None, "stop_sequence": None,
                                          "usage": {"input_tokens": 7, "output_tokens": 1,
                                                    "cache_read_input_tokens": 100}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
     "usage": {"output_tokens": 3}},
    {"type": "message_stop", "amazon-bedrock-invocationMetrics": {"inputTokenCount": 7, "outputTokenCount": 3}},
]


def test_claudes_chunks_are_unwrapped_or_reframed() -> None:
    parser = BedrockStreamParser()
    out = [e for event in CLAUDE_EVENTS for e in parser.feed("chunk", _chunk(event))]
    assert TextDelta(index=0, text="Hello") in out and parser.done
    passthrough = ChunkPassthrough()
    frames = [passthrough.feed("chunk", _chunk(event)) for event in CLAUDE_EVENTS]
    for frame, event in zip(frames, CLAUDE_EVENTS, strict=True):
        assert isinstance(frame, bytes)
        name, data = parse_sse_event(frame.rstrip(b"\n")) or (None, b"")
        assert name == event["type"] and json.loads(data) == event  # the event, as Anthropic sends it
    assert passthrough.done and passthrough.output_chars == 5
    assert passthrough.usage == Usage(input_tokens=107, output_tokens=3, cache_read_tokens=100)


def test_exception_events_end_either_stream() -> None:
    payload = json.dumps({"message": "Too many tokens"}).encode()
    assert BedrockStreamParser().feed("throttlingException", payload) == [
        StreamError("Too many tokens", type="throttlingException", code="throttlingException")]
    passthrough = ChunkPassthrough()
    assert passthrough.feed("modelStreamErrorException", payload) is False
    assert passthrough.error is not None and passthrough.error.status == 424
