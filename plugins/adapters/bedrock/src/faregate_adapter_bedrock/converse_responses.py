"""Bedrock Converse answers ⇄ the canonical model: a ``ConverseResponse`` as a
:class:`ChatResponse`, its content blocks, stop reasons and usage. Pure functions; no I/O.

Usage convention: Converse's ``inputTokens`` leaves out the tokens read from and written to
the prompt cache (``cacheReadInputTokens``, ``cacheWriteInputTokens``), as Anthropic's
``input_tokens`` does; the canonical input count includes both, so they are added."""

from __future__ import annotations

import time
import uuid
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

STOP_FROM_CONVERSE: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}


def stop_reason(value: Any) -> StopReason | None:
    if not isinstance(value, str) or not value:
        return None
    return STOP_FROM_CONVERSE.get(value, "stop")


def _count(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def parse_usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    read, write = _count(usage, "cacheReadInputTokens"), _count(usage, "cacheWriteInputTokens")
    return Usage(input_tokens=_count(usage, "inputTokens") + read + write, output_tokens=_count(usage, "outputTokens"),
                 cache_read_tokens=read, cache_write_tokens=write)


def content_parts(blocks: Any) -> list[ContentPart]:
    """A Converse message's content blocks as canonical parts."""
    parts: list[ContentPart] = []
    for block in blocks if isinstance(blocks, list) else ():
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            parts.append(TextPart(block["text"]))
        elif isinstance(block.get("toolUse"), dict):
            use = block["toolUse"]
            arguments = use.get("input") if use.get("input") is not None else {}
            parts.append(ToolCallPart(id=str(use.get("toolUseId", "")), name=str(use.get("name", "")),
                                      arguments=json_dumps_str(arguments)))
        elif isinstance(block.get("reasoningContent"), dict):
            reasoning = block["reasoningContent"]
            text = reasoning.get("reasoningText")
            if isinstance(text, dict):
                parts.append(ReasoningPart(text=str(text.get("text", "")), signature=text.get("signature") or None))
            elif isinstance(reasoning.get("redactedContent"), str):
                parts.append(ReasoningPart(redacted=reasoning["redactedContent"]))
        # citations, guard content, images the model made: no canonical home
    return parts


def is_converse_response(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("output"), dict) and "stopReason" in obj


def parse_response(obj: Any) -> ChatResponse:
    """A ``ConverseResponse`` (it has no id: one is made)."""
    if not is_converse_response(obj):
        raise ValueError("not a Converse response")
    message = obj["output"].get("message")
    if not isinstance(message, dict):
        raise ValueError("a Converse response without its message")
    content = content_parts(message.get("content"))
    return ChatResponse(id="msg_" + uuid.uuid4().hex[:24], model="", message=Message("assistant", content),
                        stop_reason=stop_reason(obj.get("stopReason")) or "stop", usage=parse_usage(obj.get("usage")),
                        created=int(time.time()))
