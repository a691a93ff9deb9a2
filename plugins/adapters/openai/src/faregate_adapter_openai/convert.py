"""OpenAI Chat Completions JSON ⇄ the canonical model. Pure functions."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, Literal

from faregate.api import (
    ChatRequest,
    ChatResponse,
    ContentPart,
    ImagePart,
    Message,
    Reasoning,
    ReasoningDelta,
    ReasoningPart,
    StopReason,
    StreamError,
    StreamEvent,
    StreamParser,
    StreamStart,
    StreamStop,
    TextDelta,
    TextPart,
    Tool,
    ToolCallDelta,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    Usage,
    UsageEvent,
    bad_request,
    json_dumps,
    json_dumps_str,
    json_loads,
)

_DATA_URL = re.compile(r"^data:(?P<mt>[\w.+/-]+);base64,(?P<data>.*)$", re.S)

# fields with a canonical home; everything else rides along in ``extra``
_KNOWN = {
    "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature",
    "top_p", "top_k", "stop", "frequency_penalty", "presence_penalty", "seed", "n", "tools", "tool_choice",
    "parallel_tool_calls", "reasoning_effort", "response_format", "user", "functions", "function_call",
}

FINISH_TO_STOP: dict[str, StopReason] = {
    "stop": "stop", "length": "length", "tool_calls": "tool_calls", "function_call": "tool_calls",
    "content_filter": "content_filter",
}


# ---- requests -------------------------------------------------------------------------------


def _content_parts(content: Any, where: str) -> list[ContentPart]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if not isinstance(content, list):
        raise bad_request(f"{where}.content must be a string or an array", param=f"{where}.content")
    parts: list[ContentPart] = []
    for i, part in enumerate(content):
        if not isinstance(part, dict):
            raise bad_request(f"{where}.content[{i}] must be an object")
        kind = part.get("type")
        if kind == "text":
            parts.append(TextPart(str(part.get("text", ""))))
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            if not isinstance(url, str):
                raise bad_request(f"{where}.content[{i}].image_url.url must be a string")
            detail = image.get("detail") if isinstance(image, dict) else None
            match = _DATA_URL.match(url)
            if match:
                parts.append(ImagePart(data=match["data"], media_type=match["mt"], detail=detail))
            else:
                parts.append(ImagePart(url=url, detail=detail))
        elif kind == "refusal":
            parts.append(TextPart(str(part.get("refusal", ""))))
        else:
            # input_audio, file …: kept as text placeholders would lose data; refuse clearly
            raise bad_request(f"content part type {kind!r} is not supported by this conversion")
    return parts


# Reasoning that a vendor signs or encrypts (Anthropic's thinking signatures, redacted
# thinking) rides in ``reasoning_details`` (OpenRouter's convention) beside the plain
# ``reasoning_content``, so an OpenAI client that sends the assistant message back keeps
# the thinking verifiable in the next tool-call turn.


def parse_reasoning(text: str, details: Any) -> list[ContentPart]:
    if not isinstance(details, list) or not details:
        return [ReasoningPart(text=text)] if text else []
    parts: list[ContentPart] = []
    for item in details:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "reasoning.encrypted" and isinstance(item.get("data"), str):
            parts.append(ReasoningPart(redacted=item["data"]))
        elif item.get("type") == "reasoning.text":
            signature = item.get("signature")
            parts.append(ReasoningPart(text=str(item.get("text") or ""),
                                       signature=signature if isinstance(signature, str) and signature else None))
    texts = [p for p in parts if isinstance(p, ReasoningPart) and not p.redacted]
    if len(texts) == 1 and not texts[0].text:  # streamed: the text came in reasoning_content
        texts[0].text = text
    elif not texts and text:
        parts.insert(0, ReasoningPart(text=text))
    return parts


def render_reasoning_details(parts: list[ContentPart]) -> list[dict[str, Any]]:
    details: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, ReasoningPart) and p.redacted:
            details.append({"type": "reasoning.encrypted", "data": p.redacted, "index": len(details)})
        elif isinstance(p, ReasoningPart) and p.signature:
            details.append({"type": "reasoning.text", "text": p.text, "signature": p.signature,
                            "index": len(details)})
    return details


def parse_request(body: dict[str, Any]) -> ChatRequest:
    messages_in = body.get("messages")
    if not isinstance(messages_in, list) or not messages_in:
        raise bad_request("messages must be a non-empty array", param="messages")
    messages: list[Message] = []
    for i, msg in enumerate(messages_in):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise bad_request(f"{where} must be an object")
        role = msg.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool", "function"):
            raise bad_request(f"{where}.role is invalid", param=f"{where}.role")
        if role == "tool" or role == "function":
            call_id = msg.get("tool_call_id") or msg.get("name") or ""
            parts = [p for p in _content_parts(msg.get("content"), where) if isinstance(p, TextPart | ImagePart)]
            messages.append(Message("tool", [ToolResultPart(tool_call_id=str(call_id), content=parts)]))
            continue
        content: list[ContentPart] = []
        if role == "assistant":
            reasoning = msg.get("reasoning_content") or msg.get("reasoning")
            content.extend(parse_reasoning(reasoning if isinstance(reasoning, str) else "",
                                           msg.get("reasoning_details")))
        content.extend(_content_parts(msg.get("content"), where))
        if role == "assistant":
            for j, call in enumerate(msg.get("tool_calls") or []):
                fn = call.get("function") if isinstance(call, dict) else None
                if not isinstance(fn, dict):
                    raise bad_request(f"{where}.tool_calls[{j}].function must be an object")
                args = fn.get("arguments", "")
                if not isinstance(args, str):
                    args = json_dumps_str(args)
                content.append(ToolCallPart(id=str(call.get("id", "")), name=str(fn.get("name", "")),
                                            arguments=args))
        messages.append(Message(role, content, name=msg.get("name")))
    tools = []
    for i, tool in enumerate(body.get("tools") or []):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise bad_request(f"tools[{i}].function.name is required", param=f"tools[{i}]")
        tools.append(Tool(name=fn["name"], description=fn.get("description"), parameters=fn.get("parameters"),
                          strict=fn.get("strict")))
    choice = body.get("tool_choice")
    tool_choice = None
    if isinstance(choice, str):
        mode: Literal["auto", "none", "required"] = "none" if choice == "none" else (
            "required" if choice == "required" else "auto")
        tool_choice = ToolChoice(mode=mode)
    elif isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        tool_choice = ToolChoice(mode="tool", name=name)
    if body.get("parallel_tool_calls") is not None:
        tool_choice = tool_choice or ToolChoice()
        tool_choice.parallel = bool(body["parallel_tool_calls"])
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else [s for s in (stop or []) if isinstance(s, str)]
    effort = body.get("reasoning_effort")
    stream_options = body.get("stream_options") or {}
    return ChatRequest(
        model=str(body.get("model", "")),
        messages=messages,
        stream=bool(body.get("stream")),
        max_tokens=body.get("max_completion_tokens") or body.get("max_tokens"),
        temperature=body.get("temperature"),
        top_p=body.get("top_p"),
        top_k=body.get("top_k"),
        stop=stops,
        frequency_penalty=body.get("frequency_penalty"),
        presence_penalty=body.get("presence_penalty"),
        seed=body.get("seed"),
        n=body.get("n"),
        tools=tools,
        tool_choice=tool_choice,
        reasoning=Reasoning(effort=effort) if isinstance(effort, str) else None,
        response_format=body.get("response_format"),
        user=body.get("user"),
        include_usage=bool(isinstance(stream_options, dict) and stream_options.get("include_usage")),
        extra={k: v for k, v in body.items() if k not in _KNOWN},
    )


def _render_parts(parts: Sequence[ContentPart]) -> str | list[dict[str, Any]]:
    if all(isinstance(p, TextPart) for p in parts):
        return "".join(p.text for p in parts if isinstance(p, TextPart))
    out: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, TextPart):
            out.append({"type": "text", "text": p.text})
        elif isinstance(p, ImagePart):
            url = p.url or f"data:{p.media_type or 'image/png'};base64,{p.data}"
            image: dict[str, Any] = {"url": url}
            if p.detail:
                image["detail"] = p.detail
            out.append({"type": "image_url", "image_url": image})
    return out


def render_request(req: ChatRequest, model: str) -> dict[str, Any]:
    """The canonical request as an OpenAI Chat Completions body."""
    messages: list[dict[str, Any]] = []
    for msg in req.messages:
        if msg.role == "tool":
            for part in msg.content:
                if isinstance(part, ToolResultPart):
                    messages.append({"role": "tool", "tool_call_id": part.tool_call_id,
                                     "content": _render_parts(list(part.content)) or ""})
            continue
        body: dict[str, Any] = {"role": msg.role}
        visible = [p for p in msg.content if isinstance(p, TextPart | ImagePart)]
        if msg.role == "assistant":
            calls = [p for p in msg.content if isinstance(p, ToolCallPart)]
            reasoning = "".join(p.text for p in msg.content if isinstance(p, ReasoningPart))
            body["content"] = _render_parts(visible) if visible else None
            if reasoning:
                body["reasoning_content"] = reasoning
            if calls:
                body["tool_calls"] = [{"id": c.id, "type": "function",
                                       "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
        else:
            body["content"] = _render_parts(visible)
        if msg.name:
            body["name"] = msg.name
        messages.append(body)
    out: dict[str, Any] = {"model": model, "messages": messages}
    for name in ("temperature", "top_p", "frequency_penalty", "presence_penalty", "seed", "n", "user",
                 "response_format"):
        value = getattr(req, name)
        if value is not None:
            out[name] = value
    if req.max_tokens is not None:
        out["max_tokens"] = req.max_tokens
    if req.stop:
        out["stop"] = req.stop
    if req.tools:
        out["tools"] = []
        for t in req.tools:
            fn: dict[str, Any] = {"name": t.name}
            if t.description is not None:
                fn["description"] = t.description
            if t.parameters is not None:
                fn["parameters"] = t.parameters
            if t.strict is not None:
                fn["strict"] = t.strict
            out["tools"].append({"type": "function", "function": fn})
    if req.tool_choice is not None:
        tc = req.tool_choice
        if tc.mode == "tool":
            out["tool_choice"] = {"type": "function", "function": {"name": tc.name}}
        else:
            out["tool_choice"] = tc.mode
        if tc.parallel is not None and req.tools:
            out["parallel_tool_calls"] = tc.parallel
    if req.reasoning is not None and req.reasoning.enabled:
        effort = req.reasoning.effort
        if effort is None and req.reasoning.budget_tokens is not None:
            b = req.reasoning.budget_tokens
            effort = "low" if b < 4096 else "medium" if b < 16384 else "high"
        if effort:
            out["reasoning_effort"] = effort
    if req.stream:
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    for key, value in req.extra.items():
        out.setdefault(key, value)
    return out


# ---- responses ------------------------------------------------------------------------------


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


# ---- streams --------------------------------------------------------------------------------


class ChunkParser(StreamParser):
    """OpenAI ``chat.completion.chunk`` events → canonical stream events."""

    def __init__(self) -> None:
        self.done = False
        self.started = False
        self._blocks: dict[str, int] = {}  # "text" / "reasoning" / f"tool:{i}" -> block index

    def _block(self, key: str) -> int:
        index = self._blocks.get(key)
        if index is None:
            index = self._blocks[key] = len(self._blocks)
        return index

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        if data == b"[DONE]":
            self.done = True
            return []
        chunk = json_loads(data)
        out: list[StreamEvent] = []
        if not isinstance(chunk, dict):
            return out
        if "error" in chunk and isinstance(chunk["error"], dict):
            err = chunk["error"]
            return [StreamError(message=str(err.get("message", "upstream error")), type=str(err.get("type") or
                                "upstream_error"), code=err.get("code"))]
        if not self.started:
            self.started = True
            out.append(StreamStart(id=str(chunk.get("id", "")), model=str(chunk.get("model", ""))))
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                out.append(ReasoningDelta(index=self._block("reasoning"), text=reasoning))
            for detail in delta.get("reasoning_details") or []:
                if not isinstance(detail, dict):
                    continue
                if detail.get("type") == "reasoning.encrypted" and isinstance(detail.get("data"), str):
                    out.append(ReasoningDelta(index=self._block(f"redacted:{len(self._blocks)}"),
                                              redacted=detail["data"]))
                elif isinstance(detail.get("signature"), str) and detail["signature"]:
                    out.append(ReasoningDelta(index=self._block("reasoning"), signature=detail["signature"]))
            text = delta.get("content")
            if isinstance(text, str) and text:
                out.append(TextDelta(index=self._block("text"), text=text))
            for call in delta.get("tool_calls") or []:
                tool_index = int(call.get("index", 0))
                fn = call.get("function") or {}
                out.append(ToolCallDelta(index=self._block(f"tool:{tool_index}"), tool_index=tool_index,
                                         id=call.get("id"), name=fn.get("name"),
                                         arguments=fn.get("arguments") or ""))
            finish = choice.get("finish_reason")
            if finish:
                out.append(StreamStop(stop_reason=FINISH_TO_STOP.get(finish, "stop")))
        usage = parse_usage(chunk.get("usage"))
        if usage is not None:
            out.append(UsageEvent(usage))
        return out


class ChunkEncoder:
    """Canonical stream events → OpenAI chunks (``data: …`` lines, ``[DONE]``)."""

    def __init__(self, model: str, request_id: str, include_usage: bool) -> None:
        self.model = model
        self.id = f"chatcmpl-{request_id}"
        self.created = int(time.time())
        self.include_usage = include_usage
        self.sent_role = False
        self.stop_reason: str | None = None
        self._tool_ids: dict[int, str] = {}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        body: dict[str, Any] = {
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if self.include_usage:
            body["usage"] = None
        return b"data: " + json_dumps(body) + b"\n\n"

    def _role(self, delta: dict[str, Any]) -> dict[str, Any]:
        if not self.sent_role:
            self.sent_role = True
            return {"role": "assistant", **delta}
        return delta

    def encode(self, event: StreamEvent) -> bytes:
        if isinstance(event, StreamStart):
            self.sent_role = True
            return self._chunk({"role": "assistant", "content": ""})
        if isinstance(event, TextDelta):
            return self._chunk(self._role({"content": event.text}))
        if isinstance(event, ReasoningDelta):
            if event.redacted:
                detail = {"type": "reasoning.encrypted", "data": event.redacted, "index": event.index}
                return self._chunk(self._role({"reasoning_details": [detail]}))
            if event.signature:  # the text came in earlier deltas; the client joins them
                detail = {"type": "reasoning.text", "text": event.text, "signature": event.signature, "index": 0}
                delta: dict[str, Any] = {"reasoning_details": [detail]}
                if event.text:
                    delta["reasoning_content"] = event.text
                return self._chunk(self._role(delta))
            if not event.text:
                return b""
            return self._chunk(self._role({"reasoning_content": event.text}))
        if isinstance(event, ToolCallDelta):
            call: dict[str, Any] = {"index": event.tool_index}
            if event.id or event.name:
                call.update({"id": event.id or f"call_{event.tool_index}", "type": "function",
                             "function": {"name": event.name or "", "arguments": event.arguments}})
            else:
                call["function"] = {"arguments": event.arguments}
            return self._chunk(self._role({"tool_calls": [call]}))
        if isinstance(event, StreamStop):
            reason = event.stop_reason if event.stop_reason not in (None, "error") else "stop"
            self.stop_reason = reason
            return self._chunk({}, finish=reason)
        return b""

    def finish(self, usage: Usage | None) -> bytes:
        out = b""
        if self.stop_reason is None:
            out += self._chunk({}, finish="stop")
        if self.include_usage and usage is not None:
            body = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                    "choices": [], "usage": render_usage(usage)}
            out += b"data: " + json_dumps(body) + b"\n\n"
        return out + b"data: [DONE]\n\n"
