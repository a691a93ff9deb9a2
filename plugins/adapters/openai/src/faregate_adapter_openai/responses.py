"""OpenAI chat completions ⇄ the canonical :class:`ChatResponse` and :class:`Usage`,
and finish reasons ⇄ canonical stop reasons. Pure functions."""

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
)
from faregate_adapter_openai.requests import parse_reasoning, render_reasoning_details

FINISH_TO_STOP: dict[str, StopReason] = {
    "stop": "stop", "length": "length", "tool_calls": "tool_calls", "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def parse_usage(u: Any) -> Usage | None:
    if not isinstance(u, dict):
        return None
    prompt_details = u.get("prompt_tokens_details") or {}
    completion_details = u.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=int(u.get("prompt_tokens") or 0),
        output_tokens=int(u.get("completion_tokens") or 0),
        cache_read_tokens=int(prompt_details.get("cached_tokens") or 0),
        cache_write_tokens=int(prompt_details.get("cache_write_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
        image_tokens=int(prompt_details.get("image_tokens") or 0),
        audio_tokens=int(prompt_details.get("audio_tokens") or 0),
    )


def render_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": usage.audio_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    }


def parse_response(body: dict[str, Any]) -> ChatResponse:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("no choices")
    choice = choices[0]
    msg = choice.get("message") or {}
    content: list[ContentPart] = []
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    content.extend(parse_reasoning(reasoning if isinstance(reasoning, str) else "", msg.get("reasoning_details")))
    text = msg.get("content")
    if isinstance(text, str) and text:
        content.append(TextPart(text))
    refusal = msg.get("refusal")
    if isinstance(refusal, str) and refusal:
        content.append(TextPart(refusal))
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        content.append(ToolCallPart(id=str(call.get("id", "")), name=str(fn.get("name", "")),
                                    arguments=str(fn.get("arguments", ""))))
    finish = choice.get("finish_reason")
    return ChatResponse(
        id=str(body.get("id", "")), model=str(body.get("model", "")), message=Message("assistant", content),
        stop_reason=FINISH_TO_STOP.get(finish, "stop") if finish else None, usage=parse_usage(body.get("usage")),
        created=int(body.get("created") or time.time()),
    )


def render_response(resp: ChatResponse, model: str) -> dict[str, Any]:
    text = "".join(p.text for p in resp.message.content if isinstance(p, TextPart))
    reasoning = "".join(p.text for p in resp.message.content if isinstance(p, ReasoningPart))
    calls = [p for p in resp.message.content if isinstance(p, ToolCallPart)]
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None,
                               "refusal": None}
    if reasoning:
        message["reasoning_content"] = reasoning
    details = render_reasoning_details(resp.message.content)
    if details:
        message["reasoning_details"] = details
    if calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
    out: dict[str, Any] = {
        "id": resp.id if resp.id.startswith("chatcmpl") else f"chatcmpl-{resp.id}",
        "object": "chat.completion",
        "created": resp.created or int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": resp.stop_reason if resp.stop_reason != "error" else "stop"}],
    }
    if resp.usage is not None:
        out["usage"] = render_usage(resp.usage)
    return out
