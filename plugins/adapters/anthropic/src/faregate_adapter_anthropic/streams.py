"""Anthropic streams: :class:`AnthropicStreamParser` reads an upstream's Messages events
into canonical stream events; :class:`AnthropicStreamEncoder` writes canonical events as
Anthropic's exact event sequence for a client. Small stateful translators; no I/O."""

from __future__ import annotations

import logging
from typing import Any

from faregate.api import (
    GatewayError,
    ReasoningDelta,
    StopReason,
    StreamEncoder,
    StreamError,
    StreamEvent,
    StreamParser,
    StreamStart,
    StreamStop,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
    json_dumps,
    json_loads,
)
from faregate_adapter_anthropic import errors
from faregate_adapter_anthropic.requests import new_tool_id
from faregate_adapter_anthropic.responses import (
    DIRECT_CALLER,
    STOP_FROM_ANTHROPIC,
    UsageTracker,
    render_delta_usage,
    render_usage,
    stop_to_anthropic,
)

log = logging.getLogger("faregate.adapter.anthropic")


# ---- streams: Anthropic events → canonical ------------------------------------------------


class AnthropicStreamParser(StreamParser):
    """Anthropic stream events → canonical stream events. Anthropic's block indices
    are already "content blocks in order of first appearance"."""

    def __init__(self) -> None:
        self.done = False
        self.usage = UsageTracker()
        self._tool_index: dict[int, int] = {}
        self._kinds: dict[int, str] = {}

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        obj = json_loads(data)
        if not isinstance(obj, dict):
            return []
        kind = obj.get("type") or event
        if kind == "message_start":
            msg = obj.get("message") or {}
            out: list[StreamEvent] = [StreamStart(id=str(msg.get("id", "")), model=str(msg.get("model", "")))]
            if isinstance(msg.get("usage"), dict):
                self.usage.update(msg["usage"])
                out.append(UsageEvent(self.usage.usage()))
            return out
        if kind == "content_block_start":
            index = int(obj.get("index", 0))
            block = obj.get("content_block") or {}
            btype = str(block.get("type") or "")
            self._kinds[index] = btype
            if btype == "text" and block.get("text"):
                return [TextDelta(index=index, text=str(block["text"]))]
            if btype == "thinking" and (block.get("thinking") or block.get("signature")):
                return [ReasoningDelta(index=index, text=str(block.get("thinking") or ""),
                                       signature=block.get("signature") or None)]
            if btype == "tool_use":
                tool_index = self._tool_index[index] = len(self._tool_index)
                return [ToolCallDelta(index=index, tool_index=tool_index, id=str(block.get("id", "")),
                                      name=str(block.get("name", "")))]
            if btype == "redacted_thinking" and isinstance(block.get("data"), str):
                return [ReasoningDelta(index=index, redacted=block["data"])]
            return []  # server tool blocks have no canonical stream form
        if kind == "content_block_delta":
            index = int(obj.get("index", 0))
            delta = obj.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                return [TextDelta(index=index, text=str(delta.get("text", "")))]
            if dtype == "thinking_delta":
                return [ReasoningDelta(index=index, text=str(delta.get("thinking", "")))]
            if dtype == "signature_delta":
                return [ReasoningDelta(index=index, signature=str(delta.get("signature", "")))]
            if dtype == "input_json_delta" and index in self._tool_index:
                return [ToolCallDelta(index=index, tool_index=self._tool_index[index],
                                      arguments=str(delta.get("partial_json", "")))]
            return []
        if kind == "message_delta":
            delta = obj.get("delta") or {}
            reason = delta.get("stop_reason")
            out = [StreamStop(stop_reason=STOP_FROM_ANTHROPIC.get(reason, "stop") if reason else None,
                              stop_sequence=delta.get("stop_sequence"))]
            if isinstance(obj.get("usage"), dict):
                self.usage.update(obj["usage"])
                out.append(UsageEvent(self.usage.usage()))
            return out
        if kind == "message_stop":
            self.done = True
            return []
        if kind == "error":
            err = obj.get("error") or {}
            etype = str(err.get("type") or "api_error")
            return [StreamError(message=str(err.get("message") or "upstream error"), type=etype, code=etype,
                                error_kind=errors.TYPE_KINDS.get(etype))]
        return []  # ping, content_block_stop, unknown future events


# ---- streams: canonical → Anthropic events -------------------------------------------------


def sse(event: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + json_dumps(payload) + b"\n\n"


class AnthropicStreamEncoder(StreamEncoder):
    """Canonical stream events → Anthropic's exact event sequence. Blocks are opened
    and closed one at a time with contiguous indices from 0, whatever the canonical
    indices were (new-api #5483: gaps crash the SDK, which indexes a list)."""

    def __init__(self, model: str, request_id: str) -> None:
        self.model = model
        self.id = f"msg_{request_id}"
        self.started = False
        self.next_index = 0
        self.open: tuple[int, str] | None = None  # (canonical index, block type)
        self.closed: set[tuple[int, str]] = set()
        self.stop_reason: StopReason | None = None
        self.stop_sequence: str | None = None
        self.finished = False

    def _start(self) -> bytes:
        if self.started:
            return b""
        self.started = True
        return sse("message_start", {"type": "message_start", "message": {
            "id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": [],
            "stop_reason": None, "stop_sequence": None, "stop_details": None, "container": None,
            # the same usage fields as a non-stream body; the counts come in message_delta
            "usage": render_usage(None)}})

    def _close(self) -> bytes:
        if self.open is None:
            return b""
        self.closed.add(self.open)
        self.open = None
        return sse("content_block_stop", {"type": "content_block_stop", "index": self.next_index - 1})

    def _block(self, key: tuple[int, str], content_block: dict[str, Any]) -> bytes:
        """Make ``key`` the open block; returns the bytes that got it there."""
        if self.open == key:
            return b""
        out = self._start() + self._close()
        self.open = key
        out += sse("content_block_start", {"type": "content_block_start", "index": self.next_index,
                                           "content_block": content_block})
        self.next_index += 1
        return out

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return sse("content_block_delta", {"type": "content_block_delta", "index": self.next_index - 1,
                                           "delta": delta})

    def encode(self, event: StreamEvent) -> bytes:
        if isinstance(event, StreamStart):
            return self._start()
        if isinstance(event, TextDelta):
            if not event.text:
                return b""
            out = self._block((event.index, "text"), {"type": "text", "text": "", "citations": None})
            return out + self._delta({"type": "text_delta", "text": event.text})
        if isinstance(event, ReasoningDelta):
            if event.redacted:  # a whole block in one event: opened with its data, closed by the next
                return self._block((event.index, "redacted_thinking"),
                                   {"type": "redacted_thinking", "data": event.redacted})
            if not event.text and not event.signature:
                return b""
            out = self._block((event.index, "thinking"), {"type": "thinking", "thinking": "", "signature": ""})
            if event.text:
                out += self._delta({"type": "thinking_delta", "thinking": event.text})
            if event.signature:
                out += self._delta({"type": "signature_delta", "signature": event.signature})
            return out
        if isinstance(event, ToolCallDelta):
            key = (event.index, "tool_use")
            if key in self.closed:
                # a fragment for a call already closed (upstreams interleaving parallel
                # calls): Anthropic's sequence cannot reopen a block
                log.warning("dropped a late tool-call fragment for block %s", event.index)
                return b""
            out = b""
            if self.open != key:
                out = self._block(key, {"type": "tool_use", "id": event.id or new_tool_id(),
                                        "name": event.name or "", "input": {}, "caller": DIRECT_CALLER})
            if event.arguments:
                out += self._delta({"type": "input_json_delta", "partial_json": event.arguments})
            return out
        if isinstance(event, StreamStop):
            self.stop_reason = event.stop_reason
            self.stop_sequence = event.stop_sequence
            return b""
        return b""  # usage and errors reach finish()/error() through the relay

    def error(self, err: GatewayError) -> bytes:
        _, payload = errors.error_payload(err)
        return sse("error", payload)

    def finish(self, usage: Usage | None) -> bytes:
        if self.finished:
            return b""
        self.finished = True
        out = self._start() + self._close()
        out += sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop_to_anthropic(self.stop_reason,
                                                                                self.stop_sequence),
                                               "stop_sequence": self.stop_sequence,
                                               "stop_details": None, "container": None},
                                     "usage": render_delta_usage(usage)})
        return out + sse("message_stop", {"type": "message_stop"})

