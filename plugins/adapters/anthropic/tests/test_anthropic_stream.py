"""Stream translation: canonical events → Anthropic's event sequence (validated with the
SDK's own types and accumulator), Anthropic events → canonical, and pass-through usage."""

from __future__ import annotations

import json

import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import RawMessageStreamEvent
from pydantic import TypeAdapter

from faregate.api import (
    ErrorKind,
    Framing,
    GatewayError,
    ReasoningDelta,
    StreamError,
    StreamStart,
    StreamStop,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
    splitter_for,
)
from faregate_adapter_anthropic.provider import AnthropicPassthrough
from faregate_adapter_anthropic.streams import AnthropicStreamEncoder, AnthropicStreamParser
from faregate_adapter_openai.streams import OpenAIStreamEncoder, OpenAIStreamParser

EVENTS = TypeAdapter(RawMessageStreamEvent)


def split(raw: bytes) -> list[tuple[str | None, dict]]:
    return [(event, json.loads(data)) for _, event, data in splitter_for(Framing.SSE).feed(raw)]


def check_sequence(events: list[tuple[str | None, dict]]):
    """Anthropic's grammar: message_start, then blocks opened and closed one at a time
    with contiguous indices from 0, then message_delta and message_stop. Every event has
    its ``event:`` line and validates against the SDK's types; returns the accumulated
    message as the SDK's stream helper would build it."""
    names = [name for name, _ in events]
    assert all(name == obj["type"] for name, obj in events)
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    open_index = None
    next_index = 0
    for name, obj in events[1:-2]:
        if name == "ping":
            continue
        if name == "content_block_start":
            assert open_index is None and obj["index"] == next_index
            open_index = next_index
            next_index += 1
        elif name == "content_block_delta":
            assert obj["index"] == open_index
        elif name == "content_block_stop":
            assert obj["index"] == open_index
            open_index = None
        else:
            raise AssertionError(f"unexpected {name}")
    assert open_index is None
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for _, obj in events:
        snapshot = accumulate_event(event=EVENTS.validate_python(obj), current_snapshot=snapshot, json_bufs=json_bufs)
    return snapshot


def openai_chunk(delta=None, finish=None, usage=None):
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
            "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


def test_openai_stream_becomes_anthropic_sequence():
    parser = OpenAIStreamParser()
    chunks = [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"reasoning_content": "Let me "}),
        openai_chunk({"reasoning_content": "think."}),
        openai_chunk({"content": "Calling "}),
        openai_chunk({"content": "tools."}),
        openai_chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                      "function": {"name": "get_weather", "arguments": ""}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
        openai_chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                      "function": {"name": "get_time", "arguments": "{}"}}]}),
        openai_chunk({}, finish="tool_calls"),
        openai_chunk(usage={"prompt_tokens": 50, "completion_tokens": 20,
                            "prompt_tokens_details": {"cached_tokens": 30}}),
        b"[DONE]",
    ]
    encoder = AnthropicStreamEncoder("my-model", "req1")
    out = b""
    usage = Usage()
    for chunk in chunks:
        for ev in parser.feed(None, chunk):
            if isinstance(ev, UsageEvent):
                usage.merge(ev.usage)
            else:
                out += encoder.encode(ev)
    out += encoder.finish(usage)
    events = split(out)
    message = check_sequence(events)
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert message.content[0].thinking == "Let me think."
    assert message.content[1].text == "Calling tools."
    assert message.content[2].input == {"city": "Paris"} and message.content[2].id == "call_a"
    assert message.content[3].name == "get_time"
    assert message.stop_reason == "tool_use" and message.model == "my-model"
    assert message.id == "msg_req1"
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens, message.usage.output_tokens) == \
        (20, 30, 20)


def test_interleaved_canonical_blocks_stay_contiguous():
    enc = AnthropicStreamEncoder("m", "r")
    out = enc.encode(StreamStart(id="x", model="m"))
    out += enc.encode(TextDelta(index=3, text="a"))
    out += enc.encode(ReasoningDelta(index=7, text="r"))
    out += enc.encode(TextDelta(index=3, text="b"))  # back to a closed text block: a new block
    out += enc.encode(TextDelta(index=3, text=""))  # nothing
    out += enc.encode(ToolCallDelta(index=9, tool_index=0, id="t1", name="f", arguments='{"x":'))
    out += enc.encode(ToolCallDelta(index=10, tool_index=1, id="t2", name="g", arguments="{}"))
    out += enc.encode(ToolCallDelta(index=9, tool_index=0, arguments="1}"))  # too late: dropped
    out += enc.encode(StreamStop(stop_reason="tool_calls"))
    out += enc.finish(None)
    message = check_sequence(split(out))
    assert [b.type for b in message.content] == ["text", "thinking", "text", "tool_use", "tool_use"]
    assert message.usage.output_tokens == 0


def test_empty_stream_and_stop_sequence():
    enc = AnthropicStreamEncoder("m", "r")
    out = enc.encode(StreamStop(stop_reason="stop", stop_sequence="END")) + enc.finish(Usage(input_tokens=5))
    message = check_sequence(split(out))
    assert message.content == [] and message.stop_reason == "stop_sequence" and message.stop_sequence == "END"
    assert enc.finish(None) == b""  # only once


def test_error_event_has_event_line():
    enc = AnthropicStreamEncoder("m", "r")
    raw = enc.error(GatewayError(502, "upstream stream broke", code="stream_broken", upstream=True))
    assert raw.startswith(b"event: error\ndata: ")
    (name, obj), = split(raw)
    assert obj == {"type": "error", "error": {"type": "api_error", "message": "upstream stream broke"}}


def anthropic_events(*, cumulative: bool = True, error: bool = False) -> list[tuple[str, bytes]]:
    start_usage = {"input_tokens": 100, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 10,
                   "output_tokens": 1}
    delta_usage = {"output_tokens": 40}
    if cumulative:
        delta_usage = {**start_usage, "output_tokens": 40, "output_tokens_details": {"thinking_tokens": 12}}
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_up", "type": "message", "role": "assistant", "model": "claude-up", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": start_usage}}),
        ("ping", {"type": "ping"}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "signature_delta", "signature": "SIG"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "redacted_thinking", "data": "ENC"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("content_block_start", {"type": "content_block_start", "index": 2,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2,
                                 "delta": {"type": "text_delta", "text": "Hi"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        ("content_block_start", {"type": "content_block_start", "index": 3,
                                 "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 3,
                                 "delta": {"type": "input_json_delta", "partial_json": '{"a"'}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 3,
                                 "delta": {"type": "input_json_delta", "partial_json": ": 1}"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 3}),
    ]
    if error:
        events.append(("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
        return [(n, json.dumps(o).encode()) for n, o in events]
    events += [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": delta_usage}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return [(n, json.dumps(o).encode()) for n, o in events]


@pytest.mark.parametrize("cumulative", [True, False])
def test_anthropic_stream_to_canonical_counts_usage_once(cumulative):
    parser = AnthropicStreamParser()
    usage = Usage()
    events = []
    for name, data in anthropic_events(cumulative=cumulative):
        for ev in parser.feed(name, data):
            if isinstance(ev, UsageEvent):
                usage.merge(ev.usage)
            else:
                events.append(ev)
    assert parser.done
    assert events[0] == StreamStart(id="msg_up", model="claude-up")
    assert ReasoningDelta(index=0, text="hmm") in events and ReasoningDelta(index=0, signature="SIG") in events
    assert TextDelta(index=2, text="Hi") in events
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert calls[0].id == "toolu_1" and calls[0].tool_index == 0
    assert "".join(c.arguments for c in calls) == '{"a": 1}'
    assert events[-1] == StreamStop(stop_reason="tool_calls")
    assert usage.input_tokens == 1110 and usage.cache_read_tokens == 1000 and usage.cache_write_tokens == 10
    assert usage.output_tokens == 40
    # to an OpenAI client: reasoning_content, content and tool calls
    enc = OpenAIStreamEncoder("m", "r", include_usage=True)
    out = b"".join(enc.encode(e) for e in events) + enc.finish(usage)
    chunks = [json.loads(d) for _, _, d in splitter_for(Framing.SSE).feed(out) if d != b"[DONE]"]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "hmm"
    assert chunks[-1]["usage"]["prompt_tokens"] == 1110


def test_anthropic_stream_error_event():
    parser = AnthropicStreamParser()
    out = [ev for name, data in anthropic_events(error=True) for ev in parser.feed(name, data)]
    assert out[-1] == StreamError(message="Overloaded", type="overloaded_error", code="overloaded_error",
                                  error_kind=ErrorKind.OVERLOADED)


@pytest.mark.parametrize("cumulative", [True, False])
def test_passthrough_reads_usage_once_and_forwards_everything(cumulative):
    filt = AnthropicPassthrough()
    forwarded = [filt.feed(name, data) for name, data in anthropic_events(cumulative=cumulative)]
    assert all(forwarded) and filt.done and filt.error is None
    assert filt.usage == Usage(input_tokens=1110, output_tokens=40, cache_read_tokens=1000, cache_write_tokens=10,
                               reasoning_tokens=12 if cumulative else 0)
    assert filt.output_chars == len("hmm") + len("Hi") + len('{"a": 1}')


def test_passthrough_error_event_is_not_forwarded():
    filt = AnthropicPassthrough()
    results = [filt.feed(name, data) for name, data in anthropic_events(error=True)]
    assert results[-1] is False and not filt.done
    assert filt.error.type == "overloaded_error" and filt.error.status == 529


def test_redacted_thinking_survives_a_converted_stream_both_ways():
    """Anthropic stream → canonical → OpenAI chunks (reasoning_details) → canonical → Anthropic
    stream keeps a redacted_thinking block's data."""
    from faregate.api import ReasoningDelta as _RD
    from faregate.api import json_dumps, json_loads

    events = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {
            "input_tokens": 3, "output_tokens": 0}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "redacted_thinking", "data": "OPAQUE=="}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "text_delta", "text": "hi"}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 2}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    parser = AnthropicStreamParser()
    canonical = [ev for name, body in events for ev in parser.feed(name, json_dumps(body))]
    assert _RD(index=0, redacted="OPAQUE==") in canonical
    encoder = OpenAIStreamEncoder("claude", "rid", include_usage=False)
    wire = b"".join(encoder.encode(ev) for ev in canonical if ev.kind != "usage")
    chunks = [json_loads(line[6:]) for line in wire.split(b"\n\n") if line.startswith(b"data: ")]
    details = [d for c in chunks for ch in c["choices"] for d in ch["delta"].get("reasoning_details", [])]
    assert details == [{"type": "reasoning.encrypted", "data": "OPAQUE==", "index": 0}]
    back = OpenAIStreamParser()
    again = [ev for c in chunks for ev in back.feed(None, json_dumps(c))]
    anthropic_out = AnthropicStreamEncoder("claude", "rid")
    sse = b"".join(anthropic_out.encode(ev) for ev in again if ev.kind != "usage")
    starts = [json_loads(part.split(b"data: ", 1)[1]) for part in sse.split(b"\n\n")
              if part.startswith(b"event: content_block_start")]
    assert starts[0]["content_block"] == {"type": "redacted_thinking", "data": "OPAQUE=="}
    assert [s["index"] for s in starts] == [0, 1]
