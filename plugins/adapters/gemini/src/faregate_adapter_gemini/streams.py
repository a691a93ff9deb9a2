"""Gemini streams: each event is a whole ``GenerateContentResponse`` chunk, framed as
SSE (``?alt=sse``) or as the elements of one JSON array.

* :class:`GeminiStreamParser` reads an upstream's chunks into canonical events;
* :class:`GeminiStreamEncoder` writes canonical events as chunks for a Gemini client;
* :class:`GeminiPassthrough` forwards a Gemini upstream's events to a Gemini client byte
  for byte, reading usage on the side.

Gemini streams have no end marker: the chunk with the (last) ``finishReason`` is the end
of an SSE stream; a JSON array ends with its ``]``."""

from __future__ import annotations

from typing import Any

from faregate.api import (
    Framing,
    GatewayError,
    PassthroughStream,
    ReasoningDelta,
    ReasoningPart,
    StopReason,
    StreamEncoder,
    StreamError,
    StreamEvent,
    StreamParser,
    StreamStart,
    StreamStop,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    Usage,
    UsageEvent,
    json_dumps,
    json_loads,
)
from faregate_adapter_gemini import errors
from faregate_adapter_gemini.fields import get
from faregate_adapter_gemini.parts import new_call_id, parse_model_part, render_model_parts
from faregate_adapter_gemini.responses import (
    candidate_parts,
    parse_usage,
    render_candidate,
    render_usage,
    stop_from_gemini,
    stop_to_gemini,
)

SSE_END = b"\r\n\r\n"  # Google ends its SSE events with CRLF pairs
ARRAY_SEPARATOR = b",\r\n"


def _chunk(data: bytes) -> dict[str, Any]:
    obj = json_loads(data)
    if not isinstance(obj, dict):
        raise ValueError("a Gemini stream chunk is a JSON object")
    return obj


def _candidates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    found = get(obj, "candidates")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _blocked(obj: dict[str, Any]) -> bool:
    feedback = get(obj, "promptFeedback")
    return isinstance(feedback, dict) and get(feedback, "blockReason") is not None and not _candidates(obj)


# ---- upstream chunks → canonical ---------------------------------------------------------


class GeminiStreamParser(StreamParser):
    """Chunks → canonical events, for the first candidate (the canonical answer has one).
    Consecutive text (or thought text) continues one block; each function call is a
    block of its own, complete in one event."""

    def __init__(self) -> None:
        self.done = False
        self.started = False
        self.index = -1
        self.kind = ""
        self.tools = 0

    def _block(self, kind: str) -> int:
        if kind != self.kind or kind == "tool":
            self.index += 1
            self.kind = kind
        return self.index

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        if event == "end":  # the JSON array's closing bracket
            self.done = True
            return []
        obj = _chunk(data)
        if isinstance(obj.get("error"), dict):
            err = errors.stream_error(obj["error"])
            return [StreamError(err.message, type=err.type, code=err.code, error_kind=err.kind)]
        out: list[StreamEvent] = []
        if not self.started:
            self.started = True
            out.append(StreamStart(id=str(get(obj, "responseId") or ""), model=str(get(obj, "modelVersion") or "")))
        candidates = _candidates(obj)
        first = next((c for c in candidates if get(c, "index") in (None, 0)), None)
        if first is not None:
            for part in candidate_parts(first):
                out.extend(self._part(part))
            reason = stop_from_gemini(get(first, "finishReason"), self.tools > 0)
            if reason is not None:
                out.append(StreamStop(stop_reason=reason))
                self.done = True
        elif _blocked(obj):
            out.append(StreamStop(stop_reason="content_filter"))
            self.done = True
        usage = parse_usage(get(obj, "usageMetadata"))
        if usage is not None:
            out.append(UsageEvent(usage))  # cumulative: the core keeps the latest counts
        return out

    def _part(self, part: dict[str, Any]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for p in parse_model_part(part, "chunk", answer=True):
            if isinstance(p, ReasoningPart):
                out.append(ReasoningDelta(index=self._block("thought" if p.text else "signature"), text=p.text,
                                          signature=p.signature))
            elif isinstance(p, TextPart):
                out.append(TextDelta(index=self._block("text"), text=p.text))
            elif isinstance(p, ToolCallPart):
                out.append(ToolCallDelta(index=self._block("tool"), tool_index=self.tools, id=p.id, name=p.name,
                                         arguments=p.arguments))
                self.tools += 1
        return out


# ---- canonical → client chunks -----------------------------------------------------------


class GeminiStreamEncoder(StreamEncoder):
    """Canonical events as Gemini chunks (SSE or the JSON array), one candidate. Function
    calls are gathered and sent whole, as Gemini sends them; the last chunk carries the
    finish reason and the usage."""

    def __init__(self, model: str, request_id: str, *, sse: bool, show_thoughts: bool) -> None:
        self.model = model
        self.id = request_id
        self.sse = sse
        self.show_thoughts = show_thoughts
        self.opened = False  # a JSON array's "[" went out
        self.signature: str | None = None  # a signature waiting for the part it belongs to
        self.calls: dict[int, ToolCallPart] = {}
        self.reason: StopReason | None = None
        self.finished = False

    def _frame(self, obj: dict[str, Any]) -> bytes:
        data = json_dumps(obj)
        if self.sse:
            return b"data: " + data + SSE_END
        head = ARRAY_SEPARATOR if self.opened else b"["
        self.opened = True
        return head + data

    def _chunk(self, parts: list[dict[str, Any]], reason: str | None = None,
               usage: Usage | None = None) -> bytes:
        obj: dict[str, Any] = {"candidates": [render_candidate(parts, reason)]}
        if usage is not None:
            obj["usageMetadata"] = render_usage(usage)
        obj["modelVersion"] = self.model
        obj["responseId"] = self.id
        return self._frame(obj)

    def _parts(self, parts: list[dict[str, Any]]) -> bytes:
        if self.signature is not None and parts:
            parts[0].setdefault("thoughtSignature", self.signature)
            self.signature = None
        return self._chunk(parts) if parts else b""

    def _flush_calls(self) -> bytes:
        if not self.calls:
            return b""
        calls = [self.calls[k] for k in sorted(self.calls)]
        self.calls = {}
        return self._parts(render_model_parts(calls))

    def encode(self, event: StreamEvent) -> bytes:
        if isinstance(event, ToolCallDelta):
            call = self.calls.get(event.tool_index)
            if call is None:
                call = self.calls[event.tool_index] = ToolCallPart(id=event.id or new_call_id(), name="",
                                                                   arguments="")
            call.name += event.name or ""
            call.arguments += event.arguments
            return b""
        out = self._flush_calls()
        if isinstance(event, TextDelta) and event.text:
            return out + self._parts([{"text": event.text}])
        if isinstance(event, ReasoningDelta) and not event.redacted:
            if event.text and self.show_thoughts:
                part: dict[str, Any] = {"text": event.text, "thought": True}
                if event.signature:
                    part["thoughtSignature"] = event.signature
                return out + self._parts([part])
            if event.signature:
                self.signature = event.signature  # onto the next part, as Gemini places it
        elif isinstance(event, StreamStop):
            self.reason = event.stop_reason
        return out  # StreamStart: Gemini has no opening event

    def finish(self, usage: Usage | None) -> bytes:
        if self.finished:
            return b""
        self.finished = True
        out = self._flush_calls()
        last: dict[str, Any] = {"text": ""}
        if self.signature is not None:
            last["thoughtSignature"] = self.signature
            self.signature = None
        out += self._chunk([last], stop_to_gemini(self.reason), usage)  # no usage known: none claimed
        return out + (b"" if self.sse else b"]")

    def error(self, err: GatewayError) -> bytes:
        """An error in place of the next chunk. The core calls this only after the client got
        bytes, so a JSON array is open by then (from this encoder, or passed through)."""
        data = json_dumps({"error": errors.error_object(err)})
        return b"data: " + data + SSE_END if self.sse else ARRAY_SEPARATOR + data + b"]"


# ---- Gemini upstream → Gemini client, as it is ---------------------------------------------


class GeminiPassthrough(PassthroughStream):
    """Forwards every event unchanged; reads usage (cumulative in every chunk: the last
    one counts) and the output size. An SSE stream is complete when each of the
    ``candidates`` asked for has finished (Gemini returns all the requested candidates or,
    for a blocked prompt, none); a JSON array when its ``]`` came."""

    def __init__(self, *, sse: bool, candidates: int) -> None:
        self.framing = Framing.SSE if sse else Framing.JSON_ARRAY
        self.expected = max(1, candidates)
        self.finished: set[int] = set()
        self.usage: Usage | None = None
        self.done = False
        self.error: GatewayError | None = None
        self.output_chars = 0

    def feed(self, event: str | None, data: bytes) -> bool:
        if event == "end":
            self.done = True
            return True
        try:
            obj = _chunk(data)
        except ValueError:
            # garbage would break the client's SDK: fail over before the first byte, in-band after
            self.error = GatewayError(502, "upstream sent a malformed stream event", code="bad_response_body",
                                      upstream=True)
            return False
        if isinstance(obj.get("error"), dict):
            self.error = errors.stream_error(obj["error"])
            return False  # the client gets it from the format's encoder, in its framing
        usage = parse_usage(get(obj, "usageMetadata"))
        if usage is not None:
            self.usage = usage
        for candidate in _candidates(obj):
            for part in candidate_parts(candidate):
                text, call = get(part, "text"), get(part, "functionCall")
                self.output_chars += len(text) if isinstance(text, str) else len(json_dumps(call or {}))
            if get(candidate, "finishReason"):
                index = get(candidate, "index")
                self.finished.add(index if isinstance(index, int) else 0)
        if self.framing is Framing.SSE and (len(self.finished) >= self.expected or _blocked(obj)):
            self.done = True
        return True
