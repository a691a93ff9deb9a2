"""The Cohere provider's pure functions (requests, answers, stream events) and the fake's
answers held to Cohere's published response schemas."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from faregate.api import (
    ChatRequest,
    GatewayError,
    ImagePart,
    Message,
    Reasoning,
    ReasoningDelta,
    StreamError,
    StreamStop,
    TextDelta,
    TextPart,
    Tool,
    ToolCallDelta,
    ToolChoice,
    ToolResultPart,
    UpstreamTarget,
    UsageEvent,
)
from faregate_adapter_cohere.provider import CohereProvider
from faregate_adapter_cohere.testing import FakeCohere
from faregate_adapter_cohere.testing.schema import chat_request_problem, validate_chat_response, validate_stream_event

PROVIDER = CohereProvider()
TARGET = UpstreamTarget(base_url="https://api.cohere.ai", key="k", model="command-a-03-2025", stream=False,
                        channel_type=34)
WEATHER = Tool(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}})


def render(request: ChatRequest) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads(PROVIDER.build_request(request, TARGET).body or b"")
    assert chat_request_problem(body) is None, chat_request_problem(body)  # what Cohere's schema takes
    return body


def user(text: str) -> Message:
    return Message("user", [TextPart(text)])


def test_named_tool_choice_offers_only_that_tool_and_requires_it() -> None:
    other = Tool(name="get_time")
    body = render(ChatRequest(model="m", messages=[user("hi")], tools=[other, WEATHER],
                              tool_choice=ToolChoice(mode="tool", name="get_weather")))
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"] and body["tool_choice"] == "REQUIRED"
    with pytest.raises(GatewayError) as caught:
        render(ChatRequest(model="m", messages=[user("hi")], tools=[other],
                           tool_choice=ToolChoice(mode="tool", name="nope")))
    assert caught.value.param == "tool_choice"


def test_sampling_is_clamped_to_cohere_ranges_and_formats_mapped() -> None:
    body = render(ChatRequest(model="m", messages=[user("hi")], temperature=0.2, top_p=0.0, top_k=900,
                              presence_penalty=1.5, seed=-3, reasoning=Reasoning(enabled=False),
                              response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {
                                  "type": "object"}}}))
    assert (body["temperature"], body["p"], body["k"], body["presence_penalty"]) == (0.2, 0.01, 500, 1.0)
    assert "seed" not in body  # Cohere's seeds are unsigned
    assert body["thinking"] == {"type": "disabled"}
    assert body["response_format"] == {"type": "json_object", "json_schema": {"type": "object"}}


def test_what_cohere_cannot_take_is_a_400() -> None:
    with pytest.raises(GatewayError) as caught:
        render(ChatRequest(model="m", messages=[user("hi")], n=3))
    assert (caught.value.status, caught.value.param) == (400, "n")
    image_result = Message("tool", [ToolResultPart("call_1", [ImagePart(url="https://x/y.png")])])
    with pytest.raises(GatewayError):
        render(ChatRequest(model="m", messages=[user("hi"), image_result]))
    with pytest.raises(GatewayError):
        render(ChatRequest(model="m", messages=[Message("system", [TextPart("only a system prompt")])]))


def test_answer_reads_thinking_plan_text_calls_and_billed_usage() -> None:
    body = orjson.dumps({"id": "r1", "finish_reason": "TOOL_CALL", "message": {
        "role": "assistant", "tool_plan": "I will look it up.",
        "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"}],
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
        "usage": {"billed_units": {"input_tokens": 5.0, "output_tokens": 3}, "tokens": {"input_tokens": 70,
                                                                                        "output_tokens": 3},
                  "cached_tokens": 2}})
    response = PROVIDER.parse_response(body)
    kinds = [p.type for p in response.message.content]
    assert kinds == ["reasoning", "reasoning", "text", "tool_call"] and response.stop_reason == "tool_calls"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.cache_read_tokens) == (5, 3, 2)
    raw_only = orjson.dumps({"id": "r", "finish_reason": "MAX_TOKENS", "message": {"role": "assistant"},
                             "usage": {"tokens": {"input_tokens": 9, "output_tokens": 4}}})
    response = PROVIDER.parse_response(raw_only)
    assert response.stop_reason == "length" and response.usage is not None and response.usage.input_tokens == 9


def test_stream_numbers_content_plan_and_calls_as_one_message() -> None:
    parser = PROVIDER.stream_parser()

    def feed(event: dict[str, Any]) -> list[Any]:
        return parser.feed(str(event["type"]), orjson.dumps(event))

    feed({"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}})
    plan = feed({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "Plan."}}})
    start = feed({"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {
        "id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}}}})
    args = feed({"type": "tool-call-delta", "index": 0,
                 "delta": {"message": {"tool_calls": {"function": {"arguments": "{}"}}}}})
    text = feed({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "x"}}}})
    assert plan == [ReasoningDelta(index=0, text="Plan.")]
    assert start == [ToolCallDelta(index=1, tool_index=0, id="c1", name="f", arguments="")]
    assert args == [ToolCallDelta(index=1, tool_index=0, arguments="{}")]
    assert text == [TextDelta(index=2, text="x")]
    end = feed({"type": "message-end", "delta": {"finish_reason": "ERROR", "error": "the model failed",
                                                 "usage": {"billed_units": {"input_tokens": 1, "output_tokens": 2}}}})
    assert isinstance(end[0], StreamError) and end[0].message == "the model failed"
    assert end[1] == StreamStop(stop_reason="error") and isinstance(end[2], UsageEvent) and parser.done


@pytest.mark.parametrize("with_tools", [False, True])
async def test_the_fakes_answers_hold_to_cohere_response_schemas(with_tools: bool) -> None:
    import httpx

    body: dict[str, Any] = {"model": "command-a-03-2025", "messages": [{"role": "user", "content": "hello"}],
                            "thinking": {"type": "enabled", "token_budget": 100}}
    if with_tools:
        body["tools"] = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
        body["tool_choice"] = "REQUIRED"
    async with FakeCohere(key="k") as fake, httpx.AsyncClient(base_url=fake.base_url,
                                                              headers={"Authorization": "Bearer k"}) as http:
        regular = await http.post("/v2/chat", json=body)
        validate_chat_response(regular.json())
        streamed = await http.post("/v2/chat", json={**body, "stream": True})
        events = [line[len("data: "):] for line in streamed.text.splitlines() if line.startswith("data: ")]
        for event in events:
            validate_stream_event(orjson.loads(event))
        assert orjson.loads(events[-1])["type"] == "message-end"
        assert fake.violations == []
