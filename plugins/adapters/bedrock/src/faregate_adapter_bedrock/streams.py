"""Bedrock streams, in AWS event-stream framing (the core's splitter hands over each
message's ``:event-type``, or ``:exception-type``, and its payload):

* InvokeModelWithResponseStream (Claude): each Anthropic Messages event, base64 in the
  ``bytes`` of a ``chunk`` event. An Anthropic client gets them re-framed as Server-Sent
  Events, unchanged otherwise (:class:`ChunkPassthrough`); other clients through the
  Anthropic plugin's parser.
* ConverseStream (every other model): typed events ``messageStart``,
  ``contentBlockStart`` (a tool call's id and name), ``contentBlockDelta`` (text, tool
  input, reasoning), ``contentBlockStop``, ``messageStop`` (the stop reason) and, last,
  ``metadata`` (usage) (:class:`ConverseStreamParser`).

Exception events (``throttlingException``, ``modelStreamErrorException`` …) end either
kind with an error."""

from __future__ import annotations

import base64
from typing import Any

from faregate.api import (
    GatewayError,
    PassthroughStream,
    ReasoningDelta,
    StreamError,
    StreamEvent,
    StreamParser,
    StreamStart,
    StreamStop,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
    json_loads,
    sse_bytes,
)
from faregate_adapter_anthropic.provider import AnthropicPassthrough
from faregate_adapter_anthropic.streams import AnthropicStreamParser
from faregate_adapter_bedrock.converse_responses import parse_usage, stop_reason
from faregate_adapter_bedrock.errors import is_exception, stream_exception

CHUNK = "chunk"


def chunk_payload(data: bytes) -> bytes:
    """The Anthropic event a ``chunk`` event carries (base64 in its ``bytes``)."""
    obj = json_loads(data)
    if not isinstance(obj, dict) or not isinstance(obj.get("bytes"), str):
        raise ValueError("a chunk event without its bytes")
    return base64.b64decode(obj["bytes"], validate=True)


def _object(data: bytes) -> dict[str, Any]:
    obj = json_loads(data)
    if not isinstance(obj, dict):
        raise ValueError("a Bedrock stream event is a JSON object")
    return obj


class ConverseStreamParser(StreamParser):
    """ConverseStream events → canonical events. ``contentBlockIndex`` already numbers the
    blocks of the one assistant message in order of first appearance."""

    def __init__(self) -> None:
        self.done = False
        self._tools: dict[int, int] = {}  # block index → tool index

    def _tool_index(self, index: int) -> int:
        if index not in self._tools:
            self._tools[index] = len(self._tools)
        return self._tools[index]

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        obj = _object(data)
        index = obj.get("contentBlockIndex")
        index = index if isinstance(index, int) and not isinstance(index, bool) else 0
        if event == "messageStart":
            return [StreamStart(id="", model="")]
        if event == "contentBlockStart":
            start = obj.get("start")
            use = start.get("toolUse") if isinstance(start, dict) else None
            if isinstance(use, dict):
                return [ToolCallDelta(index=index, tool_index=self._tool_index(index),
                                      id=str(use.get("toolUseId", "")), name=str(use.get("name", "")))]
            return []
        if event == "contentBlockDelta":
            return self._delta(index, obj.get("delta"))
        if event == "messageStop":
            return [StreamStop(stop_reason=stop_reason(obj.get("stopReason")) or "stop")]
        if event == "metadata":
            self.done = True
            usage = parse_usage(obj.get("usage"))
            return [UsageEvent(usage)] if usage is not None else []
        return []  # contentBlockStop, and events added later

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        if not isinstance(delta, dict):
            return []
        if isinstance(delta.get("text"), str):
            return [TextDelta(index=index, text=delta["text"])]
        use = delta.get("toolUse")
        if isinstance(use, dict):
            return [ToolCallDelta(index=index, tool_index=self._tool_index(index), arguments=str(use.get("input", "")))]
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            if isinstance(reasoning.get("text"), str):
                return [ReasoningDelta(index=index, text=reasoning["text"])]
            if isinstance(reasoning.get("signature"), str):
                return [ReasoningDelta(index=index, signature=reasoning["signature"])]
            if isinstance(reasoning.get("redactedContent"), str):
                return [ReasoningDelta(index=index, redacted=reasoning["redactedContent"])]
        return []


class BedrockStreamParser(StreamParser):
    """Either kind of Bedrock stream, told apart by its events."""

    def __init__(self) -> None:
        self.done = False
        self.anthropic = AnthropicStreamParser()
        self.converse = ConverseStreamParser()

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        if is_exception(event):
            err = stream_exception(str(event), data)
            return [StreamError(err.message, type=err.type, code=err.code)]
        if event == CHUNK:
            events = self.anthropic.feed(None, chunk_payload(data))
            self.done = self.anthropic.done
            return events
        events = self.converse.feed(event, data)
        self.done = self.converse.done
        return events


class ChunkPassthrough(PassthroughStream):
    """Claude's events for an Anthropic client: each ``chunk`` event's Anthropic event as
    the Server-Sent Event Anthropic would have sent, bytes unchanged; usage read on the side
    by the Anthropic plugin's own pass-through reader."""

    def __init__(self) -> None:
        self.inner = AnthropicPassthrough()
        self.usage: Usage | None = None
        self.done = False
        self.error: GatewayError | None = None
        self.output_chars = 0

    def feed(self, event: str | None, data: bytes) -> bool | bytes:
        if is_exception(event):
            self.error = stream_exception(str(event), data)
            return False  # the client hears it from its format's encoder
        if event != CHUNK:
            return False  # a Bedrock stream of Claude carries nothing else
        decoded = chunk_payload(data)
        forward = self.inner.feed(None, decoded)
        self.usage, self.done, self.error = self.inner.usage, self.inner.done, self.inner.error
        self.output_chars = self.inner.output_chars
        if not forward:
            return False
        kind = _object(decoded).get("type")
        return sse_bytes(decoded, kind if isinstance(kind, str) else None)
