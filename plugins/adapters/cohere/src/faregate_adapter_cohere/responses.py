"""Cohere v2 Chat answers in the canonical model: the message (thinking, tool plan, text,
tool calls), the finish reason and the usage. Pure functions; no I/O.

Usage: Cohere reports what it bills (``billed_units``) and the raw token counts
(``tokens``, which include its prompt template); the bill is its ``billed_units``, as
new-api's, the raw counts when it billed none. ``cached_tokens`` are part of the input."""

from __future__ import annotations

from typing import Any

from faregate.api import ChatResponse, ContentPart, Message, ReasoningPart, StopReason, TextPart, ToolCallPart, Usage

FINISH_REASONS: dict[str, StopReason] = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_calls",
    "ERROR": "error",
    "TIMEOUT": "error",
}
MAX_COUNT = 2**31 - 1


def _count(value: Any) -> int:
    """A token count Cohere sends as a JSON number (possibly ``12.0``); 0 for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_COUNT:
        return 0
    return int(value)


def parse_usage(value: Any) -> Usage | None:
    if not isinstance(value, dict):
        return None
    billed, tokens = value.get("billed_units"), value.get("tokens")
    billed = billed if isinstance(billed, dict) else {}
    tokens = tokens if isinstance(tokens, dict) else {}
    input_tokens = _count(billed.get("input_tokens")) or _count(tokens.get("input_tokens"))
    output_tokens = _count(billed.get("output_tokens")) or _count(tokens.get("output_tokens"))
    if not input_tokens and not output_tokens:
        return None
    cached = min(_count(value.get("cached_tokens")), input_tokens)
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens, cache_read_tokens=cached)


def finish_reason(value: Any) -> StopReason:
    return FINISH_REASONS.get(str(value), "stop")


def _call(item: Any) -> ToolCallPart:
    function = item["function"]
    arguments = function.get("arguments")
    return ToolCallPart(id=str(item["id"]), name=str(function["name"]),
                        arguments=arguments if isinstance(arguments, str) else "{}")


def parse_response(obj: Any) -> ChatResponse:
    """A ``ChatResponseV2``; ``ValueError`` / ``KeyError`` / ``TypeError`` when it is not one."""
    if not isinstance(obj, dict) or not isinstance(obj.get("message"), dict):
        raise ValueError("not a Cohere chat response")
    message = obj["message"]
    content = message.get("content") or []
    calls = message.get("tool_calls") or []
    if not isinstance(content, list) or not isinstance(calls, list):
        raise ValueError("not a Cohere chat message")
    parts: list[ContentPart] = []
    for block in content:
        kind = block.get("type")
        if kind == "thinking" and isinstance(block.get("thinking"), str):
            parts.append(ReasoningPart(text=block["thinking"]))
        elif kind == "text" and isinstance(block.get("text"), str):
            parts.append(TextPart(block["text"]))
    plan = message.get("tool_plan")
    if isinstance(plan, str) and plan:
        parts.insert(0, ReasoningPart(text=plan))
    parts.extend(_call(item) for item in calls)
    return ChatResponse(id=str(obj.get("id") or ""), model="", message=Message("assistant", parts),
                        stop_reason=finish_reason(obj.get("finish_reason")), usage=parse_usage(obj.get("usage")))
