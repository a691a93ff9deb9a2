"""Cohere v2 Chat stream events (SSE, each ``data`` a JSON object whose ``type`` names the
event) in canonical stream events. A small stateful translator; no I/O.

Cohere numbers content blocks and tool calls in two separate series (``index`` of
``content-*`` and of ``tool-call-*`` events) and streams the tool plan without one; the
canonical index numbers every block of the message in order of first appearance, so each
(series, index) pair gets the next canonical index when first seen."""

from __future__ import annotations

from typing import Any

from faregate.api import (
    ReasoningDelta,
    StreamError,
    StreamEvent,
    StreamParser,
    StreamStart,
    StreamStop,
    TextDelta,
    ToolCallDelta,
    UsageEvent,
    json_loads,
)
from faregate_adapter_cohere.responses import finish_reason, parse_usage


def _message_delta(obj: dict[str, Any]) -> dict[str, Any]:
    delta = obj.get("delta")
    message = delta.get("message") if isinstance(delta, dict) else None
    return message if isinstance(message, dict) else {}


class CohereStreamParser(StreamParser):
    def __init__(self) -> None:
        self.done = False
        self._blocks: dict[tuple[str, int], int] = {}
        self._kinds: dict[int, str] = {}  # content index → "text" | "thinking"
        self._calls: dict[int, int] = {}  # tool-call index → canonical tool index

    def _block(self, series: str, index: int) -> int:
        key = (series, index)
        if key not in self._blocks:
            self._blocks[key] = len(self._blocks)
        return self._blocks[key]

    def _content(self, index: int, content: Any) -> list[StreamEvent]:
        if not isinstance(content, dict):
            return []
        kind = content.get("type") or self._kinds.get(index, "text")
        self._kinds.setdefault(index, str(kind))
        block = self._block("content", index)
        if isinstance(content.get("thinking"), str) and content["thinking"]:
            return [ReasoningDelta(index=block, text=content["thinking"])]
        if isinstance(content.get("text"), str) and content["text"]:
            return [TextDelta(index=block, text=content["text"])]
        return []

    def _tool_call(self, index: int, call: Any) -> list[StreamEvent]:
        if not isinstance(call, dict):
            return []
        block = self._block("tool", index)
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else ""
        if index not in self._calls:
            self._calls[index] = len(self._calls)
            return [ToolCallDelta(index=block, tool_index=self._calls[index], id=str(call.get("id") or ""),
                                  name=str(function.get("name") or ""), arguments=arguments)]
        if not arguments:
            return []
        return [ToolCallDelta(index=block, tool_index=self._calls[index], arguments=arguments)]

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        obj = json_loads(data)
        if not isinstance(obj, dict):
            return []
        kind = obj.get("type") or event
        index = obj.get("index", 0)
        if not isinstance(index, int) or isinstance(index, bool):
            raise ValueError("a stream event's index is not a number")
        if kind == "message-start":
            return [StreamStart(id=str(obj.get("id") or ""), model="")]
        if kind in ("content-start", "content-delta"):
            return self._content(index, _message_delta(obj).get("content"))
        if kind == "tool-plan-delta":
            plan = _message_delta(obj).get("tool_plan")
            return [ReasoningDelta(index=self._block("plan", 0), text=plan)] if isinstance(plan, str) and plan else []
        if kind in ("tool-call-start", "tool-call-delta"):
            return self._tool_call(index, _message_delta(obj).get("tool_calls"))
        if kind == "message-end":
            self.done = True
            delta = obj.get("delta")
            delta = delta if isinstance(delta, dict) else {}
            out: list[StreamEvent] = []
            if isinstance(delta.get("error"), str) and delta["error"]:
                out.append(StreamError(message=delta["error"], type="upstream_error", code="cohere_stream_error"))
            out.append(StreamStop(stop_reason=finish_reason(delta.get("finish_reason"))))
            usage = parse_usage(delta.get("usage"))
            if usage is not None:
                out.append(UsageEvent(usage))
            return out
        return []  # content-end, tool-call-end, citations, debug: nothing canonical
