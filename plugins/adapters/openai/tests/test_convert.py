"""OpenAI Chat JSON ⇄ canonical: unit tests and round-trip properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faregate.api import (
    GatewayError,
    ImagePart,
    ReasoningDelta,
    StreamStart,
    StreamStop,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolResultPart,
    Usage,
    UsageEvent,
    json_dumps,
    json_dumps_str,
    json_loads,
)
from faregate.testing.inbound import inbound_request
from faregate_adapter_openai import requests, responses, streams
from faregate_adapter_openai.format import OpenAIChatFormat
from faregate_adapter_openai.provider import OpenAIPassthrough, OpenAIProvider, chat_url

text = st.text(min_size=1, max_size=40)
tool_name = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
call_id = st.from_regex(r"call_[a-z0-9]{4,8}", fullmatch=True)


@st.composite
def conversations(draw) -> dict:
    messages: list[dict] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(text)})
    for _ in range(draw(st.integers(1, 4))):
        messages.append({"role": "user", "content": draw(text)})
        if draw(st.booleans()):
            calls = [{"id": draw(call_id), "type": "function",
                      "function": {"name": draw(tool_name), "arguments": json_dumps_str({"q": draw(text)})}}
                     for _ in range(draw(st.integers(1, 2)))]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for call in calls:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(text)})
        messages.append({"role": "assistant", "content": draw(text)})
    return {"model": "gpt-4o-mini", "messages": messages, "temperature": draw(st.none() | st.floats(0, 2)),
            "max_tokens": draw(st.none() | st.integers(1, 4096))}


@settings(max_examples=60, deadline=None)
@given(conversations())
def test_round_trip_keeps_roles_text_and_tools(body):
    canonical = requests.parse_request(body)
    again = requests.parse_request(requests.render_request(canonical, body["model"]))
    assert again.messages == canonical.messages
    assert (again.temperature, again.max_tokens) == (canonical.temperature, canonical.max_tokens)


def test_parts_are_parsed():
    req = requests.parse_request({"model": "m", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                     {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}}]},
        {"role": "assistant", "content": None, "reasoning_content": "hmm",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ], "tool_choice": {"type": "function", "function": {"name": "f"}}, "stop": "END",
        "stream": True, "stream_options": {"include_usage": True}, "reasoning_effort": "high"})
    user, assistant, tool = req.messages
    assert user.content[1] == ImagePart(data="AAAA", media_type="image/png")
    assert user.content[2].url == "https://x/y.png"
    assert assistant.content[0].text == "hmm" and isinstance(assistant.content[1], ToolCallPart)
    assert tool.content[0] == ToolResultPart(tool_call_id="c1", content=[TextPart("42")])
    assert (req.tool_choice.mode, req.tool_choice.name) == ("tool", "f")
    assert req.stop == ["END"] and req.include_usage and req.reasoning.effort == "high"


@pytest.mark.parametrize("body", [
    {"model": "m", "messages": []},
    {"model": "m", "messages": [{"role": "wizard", "content": "x"}]},
    {"model": "m", "messages": [{"role": "user", "content": 5}]},
    {"model": "m", "messages": [{"role": "user", "content": [{"type": "input_audio"}]}]},
    {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]},
])
def test_bad_requests_are_400(body):
    with pytest.raises(GatewayError) as info:
        requests.parse_request(body)
    assert info.value.status == 400


def test_chunk_parser_and_encoder_agree():
    parser = streams.OpenAIStreamParser()
    chunks = [
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"reasoning_content": "think"}}]},
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]}}]},
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "{}"}}]}}]},
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"id": "c", "model": "m", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    ]
    events = [ev for c in chunks for ev in parser.feed(None, json_dumps(c))]
    assert parser.feed(None, b"[DONE]") == [] and parser.done
    kinds = [type(e) for e in events]
    assert kinds == [StreamStart, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallDelta, StreamStop, UsageEvent]
    assert [e.index for e in events if hasattr(e, "index")] == [0, 1, 2, 2]  # blocks in order of appearance
    encoder = streams.OpenAIStreamEncoder("m", "rid", include_usage=True)
    wire = b"".join(encoder.encode(e) for e in events if not isinstance(e, UsageEvent))
    wire += encoder.finish(Usage(input_tokens=3, output_tokens=4))
    reparsed = streams.OpenAIStreamParser()
    lines = [line[6:] for line in wire.split(b"\n\n") if line.startswith(b"data: ")]
    again = [ev for line in lines for ev in reparsed.feed(None, line)]
    assert [type(e) for e in again] == kinds and reparsed.done


def test_passthrough_drops_only_the_unrequested_usage_chunk():
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
    summary = OpenAIChatFormat().summarize(body, inbound_request(body))
    filt = OpenAIPassthrough(summary)
    assert filt.feed(None, b'{"choices":[{"index":0,"delta":{"content":"abc"}}],"usage":null}')
    assert not filt.feed(None, b'{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}')
    assert filt.feed(None, b"[DONE]") and filt.done
    assert filt.usage.output_tokens == 2 and filt.output_chars == 3


def test_passthrough_counts_every_kind_of_output_and_reads_errors():
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True,
            "stream_options": {"include_usage": True}}
    filt = OpenAIPassthrough(OpenAIChatFormat().summarize(body, inbound_request(body)))
    assert filt.feed(None, b'{"choices":[{"delta":{"content":"ab","reasoning_content":"cde"}},'
                           b'{"delta":{"tool_calls":[{"function":{"arguments":"{}"}},{"function":null}]}}]}')
    assert filt.feed(None, b'{"choices":[{"index":0,"text":"legacy"}]}')
    assert filt.output_chars == 2 + 3 + 2 + 6
    assert filt.feed(None, b'{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}')  # asked for
    with pytest.raises(AttributeError):  # a choice of the wrong shape: what came before it stays counted
        filt.feed(None, b'{"choices":[{"delta":{"content":"xy"}},"oops"]}')
    assert filt.output_chars == 13 + 2 and filt.error is None
    assert not filt.feed(None, b'{"error":{"message":"boom","type":"server_error"}}')
    assert filt.error is not None and filt.error.message == "boom"
    bad = OpenAIPassthrough(OpenAIChatFormat().summarize(body, inbound_request(body)))
    assert not bad.feed(None, b'{"choices":[') and bad.error is not None and bad.error.code == "bad_response_body"


def test_passthrough_body_is_untouched_unless_needed():
    provider = OpenAIProvider()
    fmt = OpenAIChatFormat()
    raw = b'{"model":"m","messages":[{"role":"user","content":"x"}],"weird":1}'
    body = json_loads(raw)
    from faregate.api import UpstreamTarget

    target = UpstreamTarget(base_url="http://u/v1", key="k", model="m", stream=False, channel_type=1)
    assert provider.build_passthrough(body, raw, target, fmt.summarize(body, inbound_request(raw))).body is raw
    target.model = "m2"
    out = json_loads(provider.build_passthrough(body, raw, target, fmt.summarize(body, inbound_request(raw))).body)
    assert out["model"] == "m2" and out["weird"] == 1
    assert chat_url("http://u/v1") == "http://u/v1/chat/completions"
    assert chat_url("https://api.openai.com") == "https://api.openai.com/v1/chat/completions"


def test_upstream_errors_are_parsed():
    provider = OpenAIProvider()
    err = provider.parse_error(429, b'{"error":{"message":"slow down","type":"requests","code":"rate_limit"}}')
    assert (err.status, err.code, err.message) == (429, "rate_limit", "slow down")
    html = provider.parse_error(524, b"<html>cloudflare</html>")
    assert html.code == "bad_response_status_code" and "html" not in html.message


def test_signed_reasoning_travels_in_reasoning_details():
    from faregate.api import ChatResponse, Message, ReasoningPart

    resp = ChatResponse(id="x", model="m", message=Message("assistant", [
        ReasoningPart(text="hmm", signature="sig1"), ReasoningPart(redacted="opaque"), TextPart("hi")]))
    message = responses.render_response(resp, "m")["choices"][0]["message"]
    assert message["reasoning_content"] == "hmm"
    assert message["reasoning_details"] == [
        {"type": "reasoning.text", "text": "hmm", "signature": "sig1", "index": 0},
        {"type": "reasoning.encrypted", "data": "opaque", "index": 1}]
    back = requests.parse_request({"model": "m", "messages": [{"role": "assistant", **message}]})
    assert back.messages[0].content[:2] == [ReasoningPart(text="hmm", signature="sig1"),
                                            ReasoningPart(redacted="opaque")]
    # streamed form: signature without text, the text in reasoning_content
    streamed = requests.parse_request({"model": "m", "messages": [{
        "role": "assistant", "content": "hi", "reasoning_content": "hmm",
        "reasoning_details": [{"type": "reasoning.text", "signature": "sig1"}]}]})
    assert streamed.messages[0].content[0] == ReasoningPart(text="hmm", signature="sig1")
    parser = streams.OpenAIStreamParser()
    events = parser.feed(None, json_dumps({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {
        "reasoning_content": "hmm", "reasoning_details": [{"type": "reasoning.text", "signature": "sig1"}]}}]}))
    assert [(type(e).__name__, getattr(e, "signature", None)) for e in events] == [
        ("StreamStart", None), ("ReasoningDelta", None), ("ReasoningDelta", "sig1")]
