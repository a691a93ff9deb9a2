"""``GenerateContentResponse`` ⇄ the canonical :class:`ChatResponse`: the first
candidate's parts, finish reasons both ways, and ``usageMetadata`` ⇄ :class:`Usage`.
Pure functions; no I/O.

Usage convention: Gemini's ``promptTokenCount`` already includes cached content, so it
is the canonical input (plus ``toolUsePromptTokenCount``, the tool results Google also
bills as input); the output is ``candidatesTokenCount`` + ``thoughtsTokenCount``, which
Gemini reports apart; ``cachedContentTokenCount`` is the cache read."""

from __future__ import annotations

import time
import uuid
from typing import Any

from faregate.api import ChatResponse, ContentPart, Message, StopReason, ToolCallPart, Usage
from faregate_adapter_gemini.fields import get
from faregate_adapter_gemini.parts import parse_model_part, render_model_parts

STOP_FROM_GEMINI: dict[str, StopReason] = {
    "FINISH_REASON_UNSPECIFIED": "stop",
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
}
STOP_TO_GEMINI: dict[str, str] = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP",
                                  "content_filter": "SAFETY", "error": "OTHER"}


def stop_from_gemini(reason: Any, has_calls: bool) -> StopReason | None:
    """Gemini's ``finishReason`` (None while a stream goes on); ``STOP`` with function calls
    is a tool-call stop; MALFORMED_FUNCTION_CALL, OTHER and the rest are errors."""
    if not isinstance(reason, str) or not reason:
        return None
    found = STOP_FROM_GEMINI.get(reason, "error")
    return "tool_calls" if found == "stop" and has_calls else found


def stop_to_gemini(reason: StopReason | None) -> str:
    return STOP_TO_GEMINI.get(reason or "stop", "STOP")


# ---- usage ------------------------------------------------------------------------------


def _count(u: dict[str, Any], name: str) -> int:
    value = get(u, name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def parse_usage(u: Any) -> Usage | None:
    if not isinstance(u, dict):
        return None
    thoughts = _count(u, "thoughtsTokenCount")
    audio = 0
    details = get(u, "promptTokensDetails")
    for item in details if isinstance(details, list) else ():
        if isinstance(item, dict) and get(item, "modality") == "AUDIO":
            audio += _count(item, "tokenCount")
    return Usage(input_tokens=_count(u, "promptTokenCount") + _count(u, "toolUsePromptTokenCount"),
                 output_tokens=_count(u, "candidatesTokenCount") + thoughts,
                 cache_read_tokens=_count(u, "cachedContentTokenCount"), reasoning_tokens=thoughts,
                 audio_tokens=audio)


def render_usage(usage: Usage) -> dict[str, Any]:
    """A ``usageMetadata`` from canonical usage: reasoning tokens split out of the output again."""
    out: dict[str, Any] = {"promptTokenCount": usage.input_tokens,
                           "candidatesTokenCount": max(0, usage.output_tokens - usage.reasoning_tokens),
                           "totalTokenCount": usage.input_tokens + usage.output_tokens}
    if usage.cache_read_tokens:
        out["cachedContentTokenCount"] = usage.cache_read_tokens
    if usage.reasoning_tokens:
        out["thoughtsTokenCount"] = usage.reasoning_tokens
    return out


# ---- responses --------------------------------------------------------------------------


def is_response(obj: Any) -> bool:
    """Whether ``obj`` has the shape of a ``GenerateContentResponse`` (candidates, or the
    prompt feedback of a blocked prompt)."""
    if not isinstance(obj, dict):
        return False
    candidates = get(obj, "candidates")
    if candidates is not None:
        return isinstance(candidates, list) and all(isinstance(c, dict) for c in candidates)
    return isinstance(get(obj, "promptFeedback"), dict)


def candidate_parts(candidate: dict[str, Any]) -> list[Any]:
    content = get(candidate, "content")
    parts = get(content, "parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def parse_response(obj: Any) -> ChatResponse:
    if not is_response(obj):
        raise ValueError("not a GenerateContentResponse")
    candidates = get(obj, "candidates") or []
    first: dict[str, Any] = candidates[0] if candidates else {}
    content: list[ContentPart] = []
    for part in candidate_parts(first):
        content.extend(parse_model_part(part, "candidates[0].content.parts", answer=True))
    has_calls = any(isinstance(p, ToolCallPart) for p in content)
    reason = stop_from_gemini(get(first, "finishReason"), has_calls)
    if not candidates:  # the prompt itself was blocked (promptFeedback.blockReason)
        reason = "content_filter"
    response_id = get(obj, "responseId")
    return ChatResponse(id=response_id if isinstance(response_id, str) and response_id else uuid.uuid4().hex,
                        model=str(get(obj, "modelVersion") or ""), message=Message("assistant", content),
                        stop_reason=reason or "stop", usage=parse_usage(get(obj, "usageMetadata")),
                        created=int(time.time()))


def render_candidate(parts: list[dict[str, Any]], reason: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if reason is not None:
        candidate["finishReason"] = reason
    candidate["index"] = 0
    return candidate


def render_response(resp: ChatResponse, model: str, *, show_thoughts: bool) -> dict[str, Any]:
    """A converted answer as Gemini's: one candidate; thought text only when the client
    asked for it (``includeThoughts``), signatures always, as Gemini does."""
    parts = render_model_parts(resp.message.content, show_thoughts=show_thoughts)
    out: dict[str, Any] = {"candidates": [render_candidate(parts or [{"text": ""}], stop_to_gemini(resp.stop_reason))]}
    if resp.usage is not None:
        out["usageMetadata"] = render_usage(resp.usage)
    out["modelVersion"] = model
    out["responseId"] = resp.id
    return out
