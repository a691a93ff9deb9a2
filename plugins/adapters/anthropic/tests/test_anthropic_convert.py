"""Anthropic Messages ⇄ canonical ⇄ OpenAI Chat conversions, without a server."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faregate.api import (
    ChatResponse,
    GatewayError,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from faregate_adapter_anthropic import errors, requests, responses
from faregate_adapter_openai import requests as oai_requests
from faregate_adapter_openai import responses as oai_responses

PNG = "iVBORw0KGgo="


def anthropic_from_openai(body: dict, **kw) -> dict:
    return requests.render_request(oai_requests.parse_request(body), body["model"], **kw)


# ---- Anthropic request → canonical -------------------------------------------------------


def test_parse_system_images_tools_and_thinking():
    body = {
        "model": "claude-sonnet-4-5", "max_tokens": 2048, "stream": True,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
                   {"type": "text", "text": "Use French."}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "ENCRYPTED"},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": True},
                {"type": "text", "text": "go on"}]},
        ],
        "tools": [{"name": "lookup", "description": "Look up", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "stop_sequences": ["END"], "temperature": 0.5, "top_p": 0.9, "top_k": 5,
        "metadata": {"user_id": "u-42"},
    }
    req = requests.parse_request(body)
    roles = [m.role for m in req.messages]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    system = req.messages[0].content
    assert [p.text for p in system] == ["Be brief.", "Use French."]
    assert system[0].cache_control == {"type": "ephemeral"}
    user = req.messages[1].content
    assert user[1].data == PNG and user[1].media_type == "image/png"
    assert user[2].url == "https://example.com/a.jpg"
    assistant = req.messages[2].content
    assert assistant[0] == ReasoningPart(text="hmm", signature="sig-1")
    assert assistant[1].redacted == "ENCRYPTED"
    assert isinstance(assistant[3], ToolCallPart) and json.loads(assistant[3].arguments) == {"q": "x"}
    result = req.messages[3].content[0]
    assert isinstance(result, ToolResultPart) and result.is_error and result.content[0].text == "boom"
    assert req.messages[4].text() == "go on"
    assert req.tools[0].parameters == {"type": "object"}
    assert req.tool_choice.mode == "required" and req.tool_choice.parallel is False
    assert req.reasoning.budget_tokens == 1024
    assert (req.stop, req.temperature, req.top_p, req.top_k, req.user) == (["END"], 0.5, 0.9, 5, "u-42")
    assert req.stream and req.max_tokens == 2048


@pytest.mark.parametrize("choice,mode", [({"type": "auto"}, "auto"), ({"type": "any"}, "required"),
                                          ({"type": "none"}, "none"), ({"type": "tool", "name": "f"}, "tool")])
def test_tool_choice_both_ways(choice, mode):
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}],
            "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": choice}
    req = requests.parse_request(body)
    assert req.tool_choice.mode == mode
    assert requests.render_request(req, "m")["tool_choice"] == choice
    openai_body = oai_requests.render_request(req, "m")
    expected = {"auto": "auto", "required": "required", "none": "none"}.get(mode) or \
        {"type": "function", "function": {"name": "f"}}
    assert openai_body["tool_choice"] == expected


def test_unsupported_blocks_are_a_clear_400():
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "data": "x", "media_type": "text/plain"}}]}]}
    with pytest.raises(GatewayError) as info:
        requests.parse_request(body)
    assert info.value.status == 400 and "document" in info.value.message
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "web_search_20250305", "name": "web_search"}]}
    with pytest.raises(GatewayError):
        requests.parse_request(body)


# ---- OpenAI request → Anthropic ------------------------------------------------------------


def test_openai_conversation_to_anthropic():
    body = {
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "Weather?"},
                {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{PNG}"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "functions.get_weather:0", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
                {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": ""}}]},
            {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
            {"role": "user", "content": "thanks"},
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
                  {"type": "function", "function": {"name": "get_time"}}],
        "tool_choice": "auto", "parallel_tool_calls": False,
        "temperature": 1.7, "user": "alice", "stop": "END", "frequency_penalty": 0.3, "logprobs": True,
    }
    out = anthropic_from_openai(body)
    assert out["system"] == "Be brief."
    assert out["max_tokens"] == requests.DEFAULT_MAX_TOKENS
    assert out["temperature"] == 1.0 and out["metadata"] == {"user_id": "alice"}
    assert out["stop_sequences"] == ["END"]
    assert "frequency_penalty" not in out and "logprobs" not in out  # no Anthropic home
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    images = out["messages"][0]["content"][1:]
    assert images[0]["source"] == {"type": "base64", "media_type": "image/jpeg", "data": PNG}
    assert images[1]["source"] == {"type": "url", "url": "https://example.com/x.png"}
    calls = out["messages"][1]["content"]
    assert calls[0] == {"type": "tool_use", "id": "functions_get_weather_0", "name": "get_weather",
                        "input": {"city": "Paris"}}
    assert calls[1]["input"] == {}
    last = out["messages"][2]["content"]
    assert [b["type"] for b in last] == ["tool_result", "tool_result", "text"]
    assert last[0] == {"type": "tool_result", "tool_use_id": "functions_get_weather_0", "content": "sunny"}
    assert out["tools"][1]["input_schema"] == {"type": "object", "properties": {}}
    assert out["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_reasoning_effort_turns_thinking_on_inside_the_clients_bound():
    body = {"model": "m", "max_tokens": 20000, "reasoning_effort": "medium", "temperature": 0.2, "top_k": 3,
            "messages": [{"role": "user", "content": "think"}]}
    out = anthropic_from_openai(body)
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert out["max_tokens"] == 20000  # the client's bound includes the reasoning
    assert "temperature" not in out and "top_k" not in out
    # and back: the budget maps onto the same effort in the OpenAI adapter
    assert oai_requests.render_request(requests.parse_request(out), "m")["reasoning_effort"] == "medium"


def test_thinking_off_when_tool_turn_has_no_signature():
    messages = [{"role": "user", "content": "call tool"},
                {"role": "assistant", "content": None, "reasoning_content": "unsigned",
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    out = anthropic_from_openai({"model": "m", "reasoning_effort": "low", "messages": messages})
    assert "thinking" not in out
    assert out["messages"][1]["content"][0]["type"] == "tool_use"  # unsigned reasoning is not sent
    # signed thinking (a Messages client) keeps thinking on
    body = {"model": "m", "max_tokens": 4000, "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [{"role": "user", "content": "call tool"},
                         {"role": "assistant", "content": [
                             {"type": "thinking", "thinking": "t", "signature": "s"},
                             {"type": "tool_use", "id": "c1", "name": "f", "input": {}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]}]}
    out = requests.render_request(requests.parse_request(body), "m")
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert out["messages"][1:] == body["messages"][1:]
    assert out["messages"][0]["content"] == [{"type": "text", "text": "call tool"}]


def test_anthropic_round_trip_keeps_signatures_and_redacted_thinking():
    body = {"model": "m", "max_tokens": 5000, "thinking": {"type": "enabled", "budget_tokens": 2000},
            "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "q"}]},
                         {"role": "assistant", "content": [
                             {"type": "thinking", "thinking": "a", "signature": "sig-a"},
                             {"type": "redacted_thinking", "data": "XYZ"},
                             {"type": "text", "text": "answer"}]},
                         {"role": "user", "content": [{"type": "text", "text": "more"}]}],
            "stop_sequences": ["x"], "top_p": 0.97, "metadata": {"user_id": "u"}}
    out = requests.render_request(requests.parse_request(body), "m")
    assert out == body


def test_max_tokens_default_from_channel_setting():
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert anthropic_from_openai(body, default_max_tokens=1234)["max_tokens"] == 1234


# ---- responses ------------------------------------------------------------------------------


@pytest.mark.parametrize("anthropic_reason,canonical,openai_finish", [
    ("end_turn", "stop", "stop"), ("stop_sequence", "stop", "stop"), ("max_tokens", "length", "length"),
    ("tool_use", "tool_calls", "tool_calls"), ("refusal", "content_filter", "content_filter"),
])
def test_stop_reasons_both_ways(anthropic_reason, canonical, openai_finish):
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "hi"}], "stop_reason": anthropic_reason,
            "stop_sequence": "END" if anthropic_reason == "stop_sequence" else None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}
    resp = responses.parse_response(body)
    assert resp.stop_reason == canonical
    assert oai_responses.render_response(resp, "m")["choices"][0]["finish_reason"] == openai_finish
    assert responses.render_response(resp, "m")["stop_reason"] == anthropic_reason
    # and from an OpenAI upstream
    back = oai_responses.parse_response(oai_responses.render_response(resp, "m"))
    expected = "end_turn" if anthropic_reason == "stop_sequence" else anthropic_reason
    assert responses.render_response(back, "m")["stop_reason"] == expected


def test_usage_cache_tokens_are_part_of_canonical_input():
    usage = responses.parse_usage({"input_tokens": 100, "cache_read_input_tokens": 1000,
                                   "cache_creation_input_tokens": 50, "output_tokens": 70,
                                   "output_tokens_details": {"thinking_tokens": 30}})
    assert usage == Usage(input_tokens=1150, output_tokens=70, cache_read_tokens=1000, cache_write_tokens=50,
                          reasoning_tokens=30)
    assert responses.render_usage(usage) == {"input_tokens": 100, "cache_read_input_tokens": 1000,
                                             "cache_creation_input_tokens": 50, "output_tokens": 70,
                                             "output_tokens_details": {"thinking_tokens": 30},
                                             "cache_creation": {"ephemeral_5m_input_tokens": 50,
                                                                "ephemeral_1h_input_tokens": 0},
                                             "server_tool_use": None, "service_tier": None, "inference_geo": None}
    # one-hour writes are kept apart (priced higher), and said so again on the way out
    timed = responses.parse_usage({"input_tokens": 100, "cache_creation_input_tokens": 50, "output_tokens": 1,
                                   "cache_creation": {"ephemeral_5m_input_tokens": 20,
                                                      "ephemeral_1h_input_tokens": 30}})
    assert (timed.cache_write_tokens, timed.cache_write_1h_tokens) == (50, 30)
    assert responses.render_usage(timed)["cache_creation"] == {"ephemeral_5m_input_tokens": 20,
                                                               "ephemeral_1h_input_tokens": 30}
    # OpenAI's cached prompt tokens come out as Anthropic cache reads
    openai_usage = oai_responses.parse_usage({"prompt_tokens": 500, "completion_tokens": 9,
                                              "prompt_tokens_details": {"cached_tokens": 400}})
    assert responses.render_usage(openai_usage)["input_tokens"] == 100


def test_response_with_thinking_and_tools_to_openai_and_back():
    body = {"id": "msg_9", "type": "message", "role": "assistant", "model": "claude",
            "content": [{"type": "thinking", "thinking": "plan", "signature": "sig"},
                        {"type": "text", "text": "calling", "citations": None},
                        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1},
                         "caller": {"type": "direct"}}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 4}}
    resp = responses.parse_response(body)
    out = oai_responses.render_response(resp, "claude")
    message = out["choices"][0]["message"]
    assert message["reasoning_content"] == "plan" and message["content"] == "calling"
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a":1}'}
    rendered = responses.render_response(resp, "alias")
    assert rendered["content"] == body["content"] and rendered["model"] == "alias"
    assert rendered["id"] == "msg_9"


def test_openai_response_to_anthropic_has_signature_field():
    resp = ChatResponse(id="chatcmpl-1", model="gpt", message=Message("assistant", [
        ReasoningPart(text="r"), TextPart("t"), ToolCallPart(id="call_1", name="f", arguments="{bad")]),
        stop_reason="tool_calls", usage=Usage(input_tokens=5, output_tokens=2))
    out = responses.render_response(resp, "gpt")
    assert out["content"] == [{"type": "thinking", "thinking": "r", "signature": ""},
                              {"type": "text", "text": "t", "citations": None},
                              {"type": "tool_use", "id": "call_1", "name": "f", "input": {},
                               "caller": {"type": "direct"}}]
    assert out["id"] == "msg_chatcmpl-1" and out["stop_reason"] == "tool_use"


# ---- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("err,status,kind", [
    (GatewayError(400, "x", type="invalid_request_error"), 400, "invalid_request_error"),
    (GatewayError(401, "x", code="invalid_api_key"), 401, "authentication_error"),
    (GatewayError(403, "x", code="insufficient_user_quota"), 403, "permission_error"),
    (GatewayError(503, "x", code="model_not_found"), 404, "not_found_error"),
    (GatewayError(413, "x"), 413, "request_too_large"),
    (GatewayError(429, "x", upstream=True, type="rate_limit_exceeded"), 429, "rate_limit_error"),
    (GatewayError(500, "x", code="internal_error"), 500, "api_error"),
    (GatewayError(502, "x", code="bad_response_body", upstream=True), 500, "api_error"),
    (GatewayError(503, "x"), 529, "overloaded_error"),
    (GatewayError(529, "x", type="overloaded_error", upstream=True), 529, "overloaded_error"),
    (GatewayError(503, "x", type="overloaded_error", upstream=True), 503, "overloaded_error"),
    (GatewayError(405, "x"), 400, "invalid_request_error"),
])
def test_error_mapping(err, status, kind):
    assert errors.anthropic_error(err) == (status, kind)


# ---- property: OpenAI → canonical → Anthropic → canonical -----------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30)
_ids = st.from_regex(r"call_[A-Za-z0-9]{1,12}", fullmatch=True)
_args = st.dictionaries(st.sampled_from(["a", "b", "city"]),
                        st.one_of(st.integers(-5, 5), _text, st.booleans()), max_size=3)


@st.composite
def openai_conversations(draw):
    messages = []
    if draw(st.booleans()):
        messages.append({"role": draw(st.sampled_from(["system", "developer"])), "content": draw(_text)})
    for _ in range(draw(st.integers(1, 4))):
        messages.append({"role": "user", "content": draw(_text)})
        if draw(st.booleans()):
            ids = draw(st.lists(_ids, min_size=1, max_size=3, unique=True))
            calls = [{"id": i, "type": "function",
                      "function": {"name": draw(st.sampled_from(["f", "get_weather"])),
                                   "arguments": json.dumps(draw(_args))}} for i in ids]
            text = draw(st.one_of(st.none(), _text))
            messages.append({"role": "assistant", "content": text, "tool_calls": calls})
            for i in ids:
                messages.append({"role": "tool", "tool_call_id": i, "content": draw(_text)})
        if draw(st.booleans()):
            messages.append({"role": "assistant", "content": draw(_text)})
    return {"model": "m", "messages": messages}


def _flatten(messages: list[Message]) -> list[tuple]:
    """Role and payload per part, with system/developer unified (Anthropic has one system)."""
    out = []
    for msg in messages:
        role = "system" if msg.role == "developer" else msg.role
        for p in msg.content:
            if isinstance(p, TextPart):
                out.append((role, "text", p.text))
            elif isinstance(p, ToolCallPart):
                out.append((role, "call", p.id, p.name, json.loads(p.arguments or "{}")))
            elif isinstance(p, ToolResultPart):
                out.append((role, "result", p.tool_call_id, "".join(t.text for t in p.content), p.is_error))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(openai_conversations())
def test_round_trip_keeps_roles_text_tool_calls_and_results(body):
    first = oai_requests.parse_request(body)
    anthropic_body = json.loads(json.dumps(requests.render_request(first, "m")))  # through real JSON
    second = requests.parse_request(anthropic_body)
    assert _flatten(second.messages) == _flatten(first.messages)
    # Anthropic's alternation: no two consecutive turns of one role
    roles = [m["role"] for m in anthropic_body["messages"]]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))
