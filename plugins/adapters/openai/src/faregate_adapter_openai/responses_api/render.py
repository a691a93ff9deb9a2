"""Response objects (``object: "response"``) from the canonical model, and Responses usage
both ways. Pure functions.

Output items follow the assistant message's parts in order: reasoning → a ``reasoning``
item (summary text; the signature, or a whole redacted block, in ``encrypted_content``),
text → one ``message`` item with an ``output_text`` part, a tool call → a ``function_call``
item. A Response object echoes the request's parameters (tools, instructions, sampling,
metadata …), as OpenAI's does; ``store`` is false, the gateway keeps no responses.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from faregate.api import ChatResponse, ContentPart, ReasoningPart, StopReason, TextPart, ToolCallPart, Usage

#: canonical stop reasons that do not complete a response: (status, incomplete_details.reason)
UNFINISHED: dict[str, tuple[str, str | None]] = {
    "length": ("incomplete", "max_output_tokens"),
    "content_filter": ("incomplete", "content_filter"),
    "error": ("failed", None),
}
#: optional parameters a Response echoes when the request set them
ECHOED = ("max_output_tokens", "max_tool_calls", "prompt_cache_key", "prompt_cache_retention", "safety_identifier",
          "top_logprobs", "user")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def parse_usage(u: Any) -> Usage | None:
    """A Responses ``usage`` object (``input_tokens`` includes cached reads, ``output_tokens``
    reasoning: the canonical convention already)."""
    if not isinstance(u, dict):
        return None
    inputs = u.get("input_tokens_details")
    outputs = u.get("output_tokens_details")
    return Usage(
        input_tokens=_count(u.get("input_tokens")),
        output_tokens=_count(u.get("output_tokens")),
        cache_read_tokens=_count(inputs.get("cached_tokens")) if isinstance(inputs, dict) else 0,
        cache_write_tokens=_count(inputs.get("cache_write_tokens")) if isinstance(inputs, dict) else 0,
        reasoning_tokens=_count(outputs.get("reasoning_tokens")) if isinstance(outputs, dict) else 0,
    )


def render_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        # cache writes: newer than the published spec, required by the current SDKs
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens,
                                 "cache_write_tokens": usage.cache_write_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def status_of(stop_reason: StopReason | None) -> tuple[str, str | None]:
    return UNFINISHED.get(stop_reason or "stop", ("completed", None))


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": [text_part(text)]}


def reasoning_item(item_id: str, text: str, encrypted: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"id": item_id, "type": "reasoning",
                            "summary": [{"type": "summary_text", "text": text}] if text else []}
    if encrypted:
        item["encrypted_content"] = encrypted
    return item


def function_call_item(item_id: str, call_id: str, name: str, arguments: str,
                       status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "function_call", "status": status, "call_id": call_id, "name": name,
            "arguments": arguments}


def item_id(kind: str, response_id: str, index: int) -> str:
    """An output item's id: ``msg_`` / ``rs_`` / ``fc_`` + the response's + its index."""
    return f"{kind}_{response_id.removeprefix('resp_')}_{index}"


def output_items(content: Sequence[ContentPart], response_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            items.append(message_item(item_id("msg", response_id, len(items)), "".join(text)))
            text.clear()

    for part in content:
        if isinstance(part, TextPart):
            text.append(part.text)
            continue
        flush()
        if isinstance(part, ReasoningPart):
            items.append(reasoning_item(item_id("rs", response_id, len(items)), part.text,
                                        part.redacted or part.signature))
        elif isinstance(part, ToolCallPart):
            items.append(function_call_item(item_id("fc", response_id, len(items)),
                                            part.id or item_id("call", response_id, len(items)), part.name,
                                            part.arguments))
    flush()
    return items


def _tool_echo(tool: Any) -> Any:
    """A function tool as a Response lists it (``parameters`` and ``strict`` always there)."""
    if isinstance(tool, dict) and tool.get("type") == "function":
        return {"parameters": None, "strict": None, **tool}
    return tool


def response_object(params: Mapping[str, Any], *, response_id: str, created_at: int, model: str, status: str,
                    output: list[dict[str, Any]], usage: Usage | None, error: dict[str, Any] | None = None,
                    incomplete: str | None = None) -> dict[str, Any]:
    """A Response object echoing the request ``params``."""
    obj: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": params.get("instructions"),
        "model": model,
        "output": output,
        "parallel_tool_calls": params.get("parallel_tool_calls") is not False,
        "previous_response_id": None,
        "reasoning": params.get("reasoning") or {"effort": None, "summary": None},
        "service_tier": params.get("service_tier") or "default",
        "store": False,
        "temperature": params.get("temperature", 1.0),
        "text": params.get("text") or {"format": {"type": "text"}},
        "tool_choice": params.get("tool_choice") or "auto",
        "tools": [_tool_echo(t) for t in params.get("tools") or ()],
        "top_p": params.get("top_p", 1.0),
        "truncation": params.get("truncation") or "disabled",
        "metadata": params.get("metadata") or {},
    }
    if usage is not None:  # not null: the spec has an object or nothing
        obj["usage"] = render_usage(usage)
    if status == "completed":
        obj["completed_at"] = int(time.time())
    for name in ECHOED:
        if params.get(name) is not None:
            obj[name] = params[name]
    return obj


def render_response(resp: ChatResponse, model: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A converted answer as a Response object."""
    response_id = resp.id if resp.id.startswith("resp_") else f"resp_{resp.id}"
    status, incomplete = status_of(resp.stop_reason)
    error = {"code": "server_error", "message": "the model stopped with an error"} if status == "failed" else None
    return response_object(params, response_id=response_id, created_at=resp.created or int(time.time()),
                           model=model, status=status, output=output_items(resp.message.content, response_id),
                           usage=resp.usage, error=error, incomplete=incomplete)


def output_chars(output: Any) -> int:
    """The generated characters of a Response's ``output`` (billed when it has no usage)."""
    total = 0
    for item in output if isinstance(output, list) else ():
        if not isinstance(item, dict):
            continue
        for key in ("arguments", "input"):
            if isinstance(item.get(key), str):
                total += len(item[key])
        for part in (*(item.get("content") or ()), *(item.get("summary") or ())):
            if isinstance(part, dict):
                for key in ("text", "refusal"):
                    if isinstance(part.get(key), str):
                        total += len(part[key])
    return total
