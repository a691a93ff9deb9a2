"""What the fake OpenAI server answers to ``POST /v1/chat/completions``: request checks
with OpenAI's error messages, the deterministic reply, and its ``chat.completion`` body or
``chat.completion.chunk`` stream.

The reply is :data:`REPLY_PREFIX` + the last user text (at most 200 characters), cut at
``max_completion_tokens`` / ``max_tokens`` (4 characters a token, finish reason
``length``); with :attr:`FakeOpenAI.answer_tokens` set, it is billed at that many tokens
(still cut to the request's bound). With ``tools`` and a last user text containing "call tool" (or
``tool_choice`` ``required`` / a named function) it is one call of the first (or named)
tool with :data:`TOOL_ARGUMENTS`. Prompt tokens are ``len(text) // 4 + 3`` a message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import orjson

from faregate_adapter_openai.testing.errors import error_body

__all__ = ["REPLY_PREFIX", "SYSTEM_FINGERPRINT", "TOOL_ARGUMENTS", "ChatInputError", "Completion",
           "completion_body", "completion_frames", "read_chat", "wants_stream"]

REPLY_PREFIX = "Hello from fake-openai! You said: "
TOOL_ARGUMENTS = '{"city": "Paris"}'
SYSTEM_FINGERPRINT = "fp_fake0openai"


class ChatInputError(Exception):
    """A request OpenAI refuses; :attr:`body` is its 400 error body."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.body = error_body(400, message, type="invalid_request_error", param=param, code=code)


@dataclass(slots=True)
class Completion:
    """One answer, before it is rendered as a body or a stream."""

    id: str
    created: int
    model: str
    content: str | None
    tool_name: str | None
    call_id: str
    finish: str
    usage: dict[str, Any]
    stream: bool
    include_usage: bool


def wants_stream(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _split_words(text: str) -> list[str]:
    """Split ``text`` into OpenAI-like deltas (leading-space words), at least 4 when possible."""
    words = text.split(" ")
    pieces = [p for p in [words[0]] + [" " + w for w in words[1:]] if p]
    if len(pieces) >= 4 or len(text) < 4:
        return pieces or [text]
    step = -(-len(text) // 4)
    return [text[i : i + step] for i in range(0, len(text), step)]


def _split_args(arguments: str) -> list[str]:
    step = max(1, -(-len(arguments) // 4))
    return [arguments[i : i + step] for i in range(0, len(arguments), step)]


def _function_name(tool: Any) -> str | None:
    fn = tool.get("function") if isinstance(tool, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    return name if isinstance(name, str) else None


def _tool_call_name(body: dict[str, Any], messages: list[Any]) -> str | None:
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools:
        return None
    choice = body.get("tool_choice")
    if choice == "none":
        return None
    named = _function_name(choice)
    if named is None and choice != "required":
        last = messages[-1] if messages else None
        if not (isinstance(last, dict) and last.get("role") == "user"
                and "call tool" in _text_of(last.get("content")).lower()):
            return None
    if named is not None:
        return named
    first = tools[0] if isinstance(tools[0], dict) else {}
    name = _function_name(first)
    return name if name is not None else str(first.get("name") or "tool")


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0,
                                      "rejected_prediction_tokens": 0},
    }


def _check(body: Any) -> tuple[str, list[Any]]:
    """The model and messages of a valid request; raise :class:`ChatInputError` otherwise."""
    if not isinstance(body, dict):
        if body is None:
            raise ChatInputError(
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
                "your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not "
                "valid JSON.)")
        raise ChatInputError(
            f"Invalid type for request body: expected an object, but got {type(body).__name__} instead.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ChatInputError("you must provide a model parameter")
    messages = body.get("messages")
    if messages is None:
        raise ChatInputError("Missing required parameter: 'messages'.", param="messages",
                             code="missing_required_parameter")
    if not isinstance(messages, list):
        raise ChatInputError(
            f"Invalid type for 'messages': expected an array, but got {type(messages).__name__} instead.",
            param="messages", code="invalid_type")
    if not messages:
        raise ChatInputError(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array "
            "instead.", param="messages", code="empty_array")
    if not all(isinstance(m, dict) for m in messages):
        raise ChatInputError("Invalid type for 'messages[0]': expected an object.", param="messages",
                             code="invalid_type")
    return model, messages


def read_chat(body: Any, number: int, id_prefix: str, answer_tokens: int | None = None) -> Completion:
    """The answer to the chat request ``body`` (the server's ``number``-th request);
    ``answer_tokens``: what a text answer is billed at instead of its length (a model that
    writes long answers), cut to the request's bound when that is smaller."""
    model, messages = _check(body)
    prompt_tokens = 0
    last_user = ""
    for m in messages:
        text = _text_of(m.get("content"))
        prompt_tokens += max(1, len(text) // 4) + 3
        if m.get("role") == "user":
            last_user = text
    tool_name = _tool_call_name(body, messages)
    call_id = ""
    if tool_name is not None:
        content: str | None = None
        call_id = f"call_{id_prefix}{number:012d}"
        completion_tokens = max(1, (len(tool_name) + len(TOOL_ARGUMENTS)) // 4)
        finish = "tool_calls"
    else:
        content = REPLY_PREFIX + last_user[:200]
        completion_tokens = max(1, len(content) // 4) if answer_tokens is None else answer_tokens
        finish = "stop"
        limit = body.get("max_completion_tokens")
        if limit is None:
            limit = body.get("max_tokens")
        if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit < completion_tokens:
            content = content[: limit * 4]
            completion_tokens = limit
            finish = "length"
    options = body.get("stream_options")
    return Completion(id=f"chatcmpl-{id_prefix}{number:017d}", created=int(time.time()), model=model,
                      content=content, tool_name=tool_name, call_id=call_id, finish=finish,
                      usage=_usage(prompt_tokens, completion_tokens), stream=wants_stream(body),
                      include_usage=isinstance(options, dict) and options.get("include_usage") is True)


def completion_body(c: Completion) -> bytes:
    """The ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": c.content, "refusal": None, "annotations": []}
    if c.tool_name is not None:
        message["tool_calls"] = [{"id": c.call_id, "type": "function",
                                  "function": {"name": c.tool_name, "arguments": TOOL_ARGUMENTS}}]
    body: bytes = orjson.dumps({
        "id": c.id,
        "object": "chat.completion",
        "created": c.created,
        "model": c.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": c.finish}],
        "usage": c.usage,
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
    })
    return body


def completion_frames(c: Completion) -> list[bytes]:
    """The stream's SSE events: the chunks (a last one with the usage when asked for),
    then ``data: [DONE]``."""
    base: dict[str, Any] = {"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
                            "service_tier": "default", "system_fingerprint": SYSTEM_FINGERPRINT}
    with_usage = c.include_usage

    def event(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        obj = dict(base)
        obj["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
        if with_usage:
            obj["usage"] = None
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    events: list[bytes] = []
    if c.tool_name is not None:
        events.append(event({"role": "assistant", "content": None, "refusal": None, "tool_calls": [
            {"index": 0, "id": c.call_id, "type": "function", "function": {"name": c.tool_name, "arguments": ""}}]}))
        events += [event({"tool_calls": [{"index": 0, "function": {"arguments": frag}}]})
                   for frag in _split_args(TOOL_ARGUMENTS)]
    else:
        events.append(event({"role": "assistant", "content": "", "refusal": None}))
        events += [event({"content": piece}) for piece in _split_words(c.content or "")]
    events.append(event({}, c.finish))
    if with_usage:
        obj = dict(base)
        obj["choices"] = []
        obj["usage"] = c.usage
        events.append(b"data: " + orjson.dumps(obj) + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events
