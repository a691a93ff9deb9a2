"""Gemini streams without a gateway: the encoder's two framings and its in-band errors,
where signatures and hidden thoughts go, the pass-through reader's idea of the end (every
candidate finished; a JSON array's ``]``), and the parser's blocked prompts and errors."""

from __future__ import annotations

import json

from faregate.api import (
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
    json_dumps,
)
from faregate_adapter_gemini.streams import GeminiPassthrough, GeminiStreamEncoder, GeminiStreamParser
from faregate_adapter_gemini.testing.schema import validate_error, validate_response


def chunk(*parts: dict[str, object], reason: str | None = None, index: int = 0) -> bytes:
    candidate: dict[str, object] = {"content": {"role": "model", "parts": list(parts)}, "index": index}
    if reason:
        candidate["finishReason"] = reason
    return json_dumps({"candidates": [candidate], "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}})


def test_json_array_framing_and_a_late_error() -> None:
    encoder = GeminiStreamEncoder("m", "rid", sse=False, show_thoughts=False)
    wire = encoder.encode(StreamStart(id="x", model="m")) + encoder.encode(TextDelta(0, "Hel"))
    wire += encoder.encode(TextDelta(0, "lo"))
    whole = json.loads(wire + encoder.finish(Usage(input_tokens=3, output_tokens=2)))
    assert [c["candidates"][0]["content"]["parts"][0]["text"] for c in whole] == ["Hel", "lo", ""]
    assert whole[-1]["candidates"][0]["finishReason"] == "STOP" and whole[-1]["usageMetadata"]["totalTokenCount"] == 5
    for c in whole:
        validate_response(c)
    broken = json.loads(wire + encoder.error(GatewayError(502, "upstream stream broke")))
    assert validate_error(broken[-1])["error"]["status"] == "UNAVAILABLE"


def test_sse_framing_calls_whole_and_signatures_on_the_next_part() -> None:
    encoder = GeminiStreamEncoder("m", "rid", sse=True, show_thoughts=False)
    wire = encoder.encode(ReasoningDelta(0, text="secret thoughts", signature="c2lnMQ=="))
    assert wire == b""  # thoughts hidden (no includeThoughts); the signature waits for its part
    wire += encoder.encode(ToolCallDelta(1, 0, id="c1", name="get_"))
    wire += encoder.encode(ToolCallDelta(1, 0, name="weather", arguments='{"ci'))
    wire += encoder.encode(ToolCallDelta(1, 0, arguments='ty": "Paris"}'))
    wire += encoder.encode(StreamStop("tool_calls")) + encoder.finish(Usage(input_tokens=1, output_tokens=1))
    events = [json.loads(e[6:]) for e in wire.split(b"\r\n\r\n") if e.startswith(b"data: ")]
    assert events[0]["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"},
         "thoughtSignature": "c2lnMQ=="}]
    assert events[-1]["candidates"][0]["finishReason"] == "STOP" and b"secret" not in wire
    error = encoder.error(GatewayError(504, "idle"))
    assert error.startswith(b"data: ") and validate_error(json.loads(error[6:]))["error"]["code"] == 504


def test_passthrough_ends_when_every_candidate_finished() -> None:
    reader = GeminiPassthrough(sse=True, candidates=2)
    assert reader.feed(None, chunk({"text": "a"}, index=0)) and not reader.done
    assert reader.feed(None, chunk({"text": "b"}, reason="STOP", index=0)) and not reader.done
    assert reader.feed(None, chunk({"text": "c"}, reason="MAX_TOKENS", index=1)) and reader.done
    assert reader.usage == Usage(input_tokens=3, output_tokens=2) and reader.output_chars == 3


def test_passthrough_of_a_json_array_ends_at_its_bracket() -> None:
    reader = GeminiPassthrough(sse=False, candidates=1)
    assert reader.framing is Framing.JSON_ARRAY
    assert reader.feed(None, chunk({"text": "a"}, reason="STOP")) and not reader.done
    assert reader.feed("end", b"") and reader.done


def test_passthrough_holds_back_errors_and_garbage() -> None:
    reader = GeminiPassthrough(sse=True, candidates=1)
    assert not reader.feed(None, b'{"error": {"code": 429, "message": "slow", "status": "RESOURCE_EXHAUSTED"}}')
    assert reader.error is not None and (reader.error.status, reader.error.type) == (429, "RESOURCE_EXHAUSTED")
    garbage = GeminiPassthrough(sse=True, candidates=1)
    assert not garbage.feed(None, b"[1, 2") and garbage.error is not None and garbage.error.status == 502


def test_parser_blocked_prompts_errors_and_usage() -> None:
    parser = GeminiStreamParser()
    blocked = parser.feed(None, json_dumps({"promptFeedback": {"blockReason": "SAFETY"},
                                            "usageMetadata": {"promptTokenCount": 9}}))
    assert [type(e) for e in blocked] == [StreamStart, StreamStop, UsageEvent] and parser.done
    assert isinstance(blocked[1], StreamStop) and blocked[1].stop_reason == "content_filter"
    (error,) = GeminiStreamParser().feed(None, b'{"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}')
    assert isinstance(error, StreamError) and (error.message, error.code) == ("boom", "INTERNAL")
    thinking = GeminiStreamParser()
    events = thinking.feed(None, chunk({"text": "hm", "thought": True}, {"text": "yes", "thoughtSignature": "c2ln"},
                                       reason="STOP"))
    kinds = [(type(e).__name__, getattr(e, "index", None)) for e in events]
    assert kinds == [("StreamStart", None), ("ReasoningDelta", 0), ("ReasoningDelta", 1), ("TextDelta", 2),
                     ("StreamStop", None), ("UsageEvent", None)]
