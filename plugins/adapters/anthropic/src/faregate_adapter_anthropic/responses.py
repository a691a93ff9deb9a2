"""Anthropic Messages responses ⇄ the canonical :class:`ChatResponse` and :class:`Usage`,
and stop reasons ⇄ canonical stop reasons. Pure functions; no I/O.

Usage convention: Anthropic reports ``input_tokens`` *without* cache reads and cache
writes; the canonical ``Usage.input_tokens`` includes both, so they are added on the way
in and subtracted on the way out.
"""

from __future__ import annotations

import time
from typing import Any

from faregate.api import (
    ChatResponse,
    ContentPart,
    Message,
    ReasoningPart,
    StopReason,
    TextPart,
    ToolCallPart,
    Usage,
    json_dumps_str,
)
from faregate_adapter_anthropic.requests import new_tool_id, tool_input

#: a tool_use block's ``caller``: the model itself (not a server tool's code)
DIRECT_CALLER = {"type": "direct"}

STOP_FROM_ANTHROPIC: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
STOP_TO_ANTHROPIC: dict[str, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
    "error": "end_turn",
}


def stop_to_anthropic(reason: StopReason | None, stop_sequence: str | None) -> str:
    if stop_sequence:
        return "stop_sequence"
    return STOP_TO_ANTHROPIC.get(reason or "stop", "end_turn")


# ---- usage ------------------------------------------------------------------------------


class UsageTracker:
    """Anthropic usage arriving in pieces (message_start, then message_delta with
    cumulative totals): each field is *set*, never added, so nothing is counted twice."""

    __slots__ = ("cache_read", "cache_write", "cache_write_1h", "input", "output", "seen", "thinking")

    def __init__(self) -> None:
        self.input = 0
        self.output = 0
        self.cache_read = 0
        self.cache_write = 0
        self.cache_write_1h = 0  # of cache_write: the one-hour writes (cache_creation.ephemeral_1h_input_tokens)
        self.thinking = 0
        self.seen = False

    def update(self, u: Any) -> None:
        if not isinstance(u, dict):
            return
        self.seen = True
        for key, attr in (("input_tokens", "input"), ("output_tokens", "output"),
                          ("cache_read_input_tokens", "cache_read"),
                          ("cache_creation_input_tokens", "cache_write")):
            value = u.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(self, attr, value)
        lifetimes = u.get("cache_creation")
        if isinstance(lifetimes, dict):
            hour = lifetimes.get("ephemeral_1h_input_tokens")
            if isinstance(hour, int) and not isinstance(hour, bool) and hour >= 0:
                self.cache_write_1h = hour
        details = u.get("output_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("thinking_tokens"), int):
            self.thinking = details["thinking_tokens"]

    def usage(self) -> Usage:
        return Usage(input_tokens=self.input + self.cache_read + self.cache_write, output_tokens=self.output,
                     cache_read_tokens=self.cache_read, cache_write_tokens=self.cache_write,
                     cache_write_1h_tokens=min(self.cache_write_1h, self.cache_write), reasoning_tokens=self.thinking)


def parse_usage(u: Any) -> Usage | None:
    if not isinstance(u, dict):
        return None
    tracker = UsageTracker()
    tracker.update(u)
    return tracker.usage()


def render_delta_usage(usage: Usage | None) -> dict[str, Any]:
    """A stream's ``message_delta`` usage (``MessageDeltaUsage``): every field the spec
    requires, nullable ones as null."""
    usage = usage or Usage()
    return {
        "input_tokens": max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"thinking_tokens": usage.reasoning_tokens} if usage.reasoning_tokens else None,
        "server_tool_use": None,  # server tools are not converted
    }


def render_usage(usage: Usage | None) -> dict[str, Any]:
    """A message's ``usage`` (``Usage``), the same shape in a body and a stream's
    message_start; cache writes split by lifetime (one-hour ones where the upstream said so,
    the rest as 5-minute writes, Anthropic's default TTL)."""
    out = render_delta_usage(usage)
    hour = min(usage.cache_write_1h_tokens, usage.cache_write_tokens) if usage else 0
    out["cache_creation"] = {"ephemeral_5m_input_tokens": out["cache_creation_input_tokens"] - hour,
                             "ephemeral_1h_input_tokens": hour}
    out["inference_geo"] = None
    out["service_tier"] = None  # unknown: the upstream was another vendor
    return out


# ---- responses --------------------------------------------------------------------------


def parse_response(body: Any) -> ChatResponse:
    if not isinstance(body, dict) or not isinstance(body.get("content"), list):
        raise ValueError("not a Messages response")
    parts: list[ContentPart] = []
    for block in body["content"]:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(TextPart(str(block.get("text", ""))))
        elif kind == "thinking":
            parts.append(ReasoningPart(text=str(block.get("thinking", "")), signature=block.get("signature") or None))
        elif kind == "redacted_thinking":
            parts.append(ReasoningPart(redacted=str(block.get("data", ""))))
        elif kind == "tool_use":
            parts.append(ToolCallPart(id=str(block.get("id", "")), name=str(block.get("name", "")),
                                      arguments=json_dumps_str(block.get("input") or {})))
        # server tool blocks have no canonical home
    reason = body.get("stop_reason")
    return ChatResponse(
        id=str(body.get("id", "")), model=str(body.get("model", "")), message=Message("assistant", parts),
        stop_reason=STOP_FROM_ANTHROPIC.get(reason, "stop") if reason else None,
        stop_sequence=body.get("stop_sequence"), usage=parse_usage(body.get("usage")), created=int(time.time()),
    )


def render_response(resp: ChatResponse, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for p in resp.message.content:
        if isinstance(p, ReasoningPart):
            if p.redacted:
                content.append({"type": "redacted_thinking", "data": p.redacted})
            elif p.text or p.signature:
                content.append({"type": "thinking", "thinking": p.text, "signature": p.signature or ""})
        elif isinstance(p, TextPart):
            content.append({"type": "text", "text": p.text, "citations": None})
        elif isinstance(p, ToolCallPart):
            content.append({"type": "tool_use", "id": p.id or new_tool_id(), "name": p.name,
                            "input": tool_input(p.arguments), "caller": DIRECT_CALLER})
    return {
        "id": resp.id if resp.id.startswith("msg_") else f"msg_{resp.id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_to_anthropic(resp.stop_reason, resp.stop_sequence),
        "stop_sequence": resp.stop_sequence,
        "stop_details": None,  # set only for Anthropic's own refusals, never converted
        "container": None,  # code-execution containers are Anthropic's alone
        "usage": render_usage(resp.usage),
    }

