"""What the fake OpenAI server answers to ``POST /v1/responses`` and ``POST
/v1/responses/compact``: OpenAI's checks for the mistakes it names, then a deterministic
Response object (``Response``) or event stream (``ResponseStreamEvent``s), or a
``CompactResource``.

As its chat answers: the reply is :data:`REPLY_PREFIX` + the last user text (at most 200
characters), cut at ``max_output_tokens`` (4 characters a token; status ``incomplete``).
With function ``tools`` and a last user text containing "call tool" (or ``tool_choice``
``required`` / a named function) and no tool output after it, it is one ``function_call``
of the first (or named) tool with :data:`TOOL_ARGUMENTS`. With ``reasoning.effort`` (not
``none``) a ``reasoning`` item comes first: its summary (:data:`THINKING_PREFIX` + the user
text) when ``reasoning.summary`` is set, its ``encrypted_content`` when ``include`` asks for
``reasoning.encrypted_content``. With ``text.format`` ``json_schema`` / ``json_object`` the
text is the JSON object ``{"reply": <text>}``. Input tokens are ``len(text) // 4 + 3`` an
item (and the instructions), of which :data:`CACHED_TOKENS` are cached when the request names
a ``prompt_cache_key``; output tokens count the text (or the call) and the reasoning.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from faregate_adapter_openai.testing.chat import REPLY_PREFIX, TOOL_ARGUMENTS, ChatInputError

__all__ = ["CACHED_TOKENS", "REASONING_TOKENS", "THINKING_PREFIX", "Answer", "compact_body", "read_responses",
           "response_body", "response_frames"]

THINKING_PREFIX = "Thinking about: "
#: the reasoning tokens of an answer with a reasoning item
REASONING_TOKENS = 12
#: the input tokens reported read from the cache when the request names a ``prompt_cache_key``
CACHED_TOKENS = 8


@dataclass(slots=True)
class Answer:
    """One Response, before it is rendered as a body or a stream."""

    id: str
    created: int
    body: dict[str, Any]
    output: list[dict[str, Any]] = field(default_factory=list)
    status: str = "completed"
    usage: dict[str, Any] = field(default_factory=dict)
    stream: bool = False


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _input_items(body: dict[str, Any]) -> list[Any]:
    value = body.get("input")
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if isinstance(value, list):
        return value
    if value is None and (body.get("previous_response_id") or body.get("conversation")):
        return []  # the conversation so far is OpenAI's
    raise ChatInputError("Missing required parameter: 'input'.", param="input", code="missing_required_parameter")


def _call_name(body: dict[str, Any], items: list[Any], last_user: str) -> str | None:
    tools = [t for t in body.get("tools") or () if isinstance(t, dict) and t.get("type") == "function"]
    choice = body.get("tool_choice")
    if not tools or choice == "none":
        return None
    if isinstance(choice, dict) and choice.get("type") == "function":
        return str(choice.get("name"))
    after_output = bool(items) and isinstance(items[-1], dict) and items[-1].get("type") == "function_call_output"
    if choice != "required" and (after_output or "call tool" not in last_user.lower()):
        return None
    return str(tools[0].get("name"))


def read_responses(body: Any, number: int, id_prefix: str) -> Answer:
    """The answer to the Responses request ``body`` (the server's ``number``-th request)."""
    if not isinstance(body, dict):
        raise ChatInputError("We could not parse the JSON body of your request.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ChatInputError("Missing required parameter: 'model'.", param="model", code="missing_required_parameter")
    items = _input_items(body)
    prompt = max(1, len(_text(body.get("instructions"))) // 4) + 3 if body.get("instructions") else 0
    last_user = ""
    for item in items:
        if isinstance(item, dict):
            text = _text(item.get("content")) or str(item.get("output") or "") or str(item.get("arguments") or "")
            prompt += max(1, len(text) // 4) + 3
            if item.get("role") == "user":
                last_user = text
    answer = Answer(id=f"resp_{id_prefix}{number:017d}", created=int(time.time()), body=body,
                    stream=body.get("stream") is True)
    reasoning_tokens = 0
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") not in (None, "none"):
        reasoning_tokens = REASONING_TOKENS
        thought = THINKING_PREFIX + last_user[:50]
        thinking: dict[str, Any] = {"id": f"rs_{id_prefix}{number:012d}", "type": "reasoning",
                                    "summary": [{"type": "summary_text", "text": thought}] if reasoning.get("summary")
                                    else []}
        if "reasoning.encrypted_content" in (body.get("include") or ()):
            thinking["encrypted_content"] = "gAAAA" + hashlib.sha256(thought.encode()).hexdigest()
        answer.output.append(thinking)
    name = _call_name(body, items, last_user)
    if name is not None:
        answer.output.append({"id": f"fc_{id_prefix}{number:012d}", "type": "function_call", "status": "completed",
                              "call_id": f"call_{id_prefix}{number:012d}", "name": name, "arguments": TOOL_ARGUMENTS})
        completion = max(1, (len(name) + len(TOOL_ARGUMENTS)) // 4)
    else:
        text = REPLY_PREFIX + last_user[:200]
        fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
        if isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object"):
            text = orjson.dumps({"reply": text}).decode()
        completion = max(1, len(text) // 4)
        limit = body.get("max_output_tokens")
        status = "completed"
        if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit < completion + reasoning_tokens:
            completion = max(1, limit - reasoning_tokens)
            text = text[: completion * 4]
            answer.status = status = "incomplete"
        answer.output.append({"id": f"msg_{id_prefix}{number:012d}", "type": "message", "status": status,
                              "role": "assistant", "content": [
                                  {"type": "output_text", "text": text, "annotations": [], "logprobs": []}]})
    output = completion + reasoning_tokens
    cached = min(prompt, CACHED_TOKENS) if body.get("prompt_cache_key") else 0
    # cache_write_tokens: newer than the published spec, required by the current SDKs
    answer.usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                    "output_tokens": output,
                    "output_tokens_details": {"reasoning_tokens": reasoning_tokens}, "total_tokens": prompt + output}
    return answer


def _response(a: Answer, status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None) -> dict[str, Any]:
    body = a.body
    return {
        "id": a.id, "object": "response", "created_at": a.created, "status": status, "background": False,
        "completed_at": a.created if status == "completed" else None, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
        "model": body["model"], "output": output, "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": body.get("reasoning") or {"effort": None, "summary": None}, "service_tier": "default",
        "store": body.get("store", True), "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}}, "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [], "top_p": body.get("top_p", 1.0), "truncation": "disabled",
        "metadata": body.get("metadata") or {}, **({"usage": usage} if usage else {}),
    }


def response_body(a: Answer) -> bytes:
    """The Response object."""
    return orjson.dumps(_response(a, a.status, a.output, a.usage))


def _pieces(text: str) -> list[str]:
    step = max(1, -(-len(text) // 4))
    return [text[i : i + step] for i in range(0, len(text), step)] or [""]


def response_frames(a: Answer) -> list[bytes]:
    """The stream's SSE events, each with its ``sequence_number``, ending with
    ``response.completed`` (or ``response.incomplete``)."""
    frames: list[bytes] = []

    def event(kind: str, **payload: Any) -> None:
        data = {"type": kind, **payload, "sequence_number": len(frames)}
        frames.append(b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n")

    event("response.created", response=_response(a, "in_progress", [], None))
    event("response.in_progress", response=_response(a, "in_progress", [], None))
    for index, item in enumerate(a.output):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            event("response.output_item.added", output_index=index,
                  item={**item, "status": "in_progress", "content": []})
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            event("response.content_part.added", **where, content_index=0, part=empty)
            for piece in _pieces(text):
                event("response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[])
            event("response.output_text.done", **where, content_index=0, text=text, logprobs=[])
            event("response.content_part.done", **where, content_index=0, part=item["content"][0])
        elif item["type"] == "function_call":
            event("response.output_item.added", output_index=index,
                  item={**item, "status": "in_progress", "arguments": ""})
            for piece in _pieces(item["arguments"]):
                event("response.function_call_arguments.delta", **where, delta=piece)
            event("response.function_call_arguments.done", **where, name=item["name"], arguments=item["arguments"])
        else:  # reasoning
            event("response.output_item.added", output_index=index, item={**item, "summary": []})
            for s, part in enumerate(item["summary"]):
                event("response.reasoning_summary_part.added", **where, summary_index=s,
                      part={"type": "summary_text", "text": ""})
                for piece in _pieces(part["text"]):
                    event("response.reasoning_summary_text.delta", **where, summary_index=s, delta=piece)
                event("response.reasoning_summary_text.done", **where, summary_index=s, text=part["text"])
                event("response.reasoning_summary_part.done", **where, summary_index=s, part=part)
        event("response.output_item.done", output_index=index, item=item)
    event(f"response.{a.status}", response=_response(a, a.status, a.output, a.usage))
    return frames


def compact_body(body: Any, number: int, id_prefix: str) -> bytes:
    """The ``CompactResource`` of a compaction request: the user messages kept, then one
    ``compaction`` item."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        raise ChatInputError("Missing required parameter: 'model'.", param="model", code="missing_required_parameter")
    value = body.get("input")
    items = [{"role": "user", "content": value}] if isinstance(value, str) else value or []
    kept, prompt = [], 0
    for i, item in enumerate(items):
        text = _text(item.get("content")) if isinstance(item, dict) else ""
        prompt += max(1, len(text) // 4) + 3
        if isinstance(item, dict) and item.get("role") == "user":
            kept.append({"id": f"msg_{id_prefix}{number:08d}{i:04d}", "type": "message", "status": "completed",
                         "role": "user", "content": [{"type": "input_text", "text": text}]})
    summary = hashlib.sha256(orjson.dumps(items)).hexdigest()
    output = 16
    return orjson.dumps({
        "id": f"resp_{id_prefix}{number:017d}", "object": "response.compaction", "created_at": int(time.time()),
        "output": [*kept, {"id": f"cmp_{id_prefix}{number:012d}", "type": "compaction",
                           "encrypted_content": "gAAAA" + summary}],
        "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                  "output_tokens": output,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + output},
    })
