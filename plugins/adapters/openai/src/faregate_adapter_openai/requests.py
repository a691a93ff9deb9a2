"""OpenAI Chat Completions request bodies ⇄ the canonical :class:`ChatRequest`: messages,
content parts (text, images, reasoning), tools and tool choice. Pure functions."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from faregate.api import (
    ChatRequest,
    ContentPart,
    ImagePart,
    Message,
    Reasoning,
    ReasoningPart,
    TextPart,
    Tool,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    bad_request,
    json_dumps_str,
)

_DATA_URL = re.compile(r"^data:(?P<mt>[\w.+/-]+);base64,(?P<data>.*)$", re.S)

# fields with a canonical home; everything else rides along in ``extra``
_KNOWN = {
    "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature",
    "top_p", "top_k", "stop", "frequency_penalty", "presence_penalty", "seed", "n", "tools", "tool_choice",
    "parallel_tool_calls", "reasoning_effort", "response_format", "user", "functions", "function_call",
}


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
        # "none" is OpenAI's "no reasoning": disabled, the level kept for a round trip
        reasoning=Reasoning(enabled=effort != "none", effort=effort) if isinstance(effort, str) else None,
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


def render_request(req: ChatRequest, model: str, max_tokens_field: str = "max_completion_tokens") -> dict[str, Any]:
    """The canonical request as an OpenAI Chat Completions body. The output bound goes in
    ``max_completion_tokens`` (``max_tokens`` is deprecated and refused by reasoning
    models); a vendor that knows only ``max_tokens`` passes that name."""
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
        out[max_tokens_field] = req.max_tokens
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
    if req.reasoning is not None and not req.reasoning.enabled and req.reasoning.effort == "none":
        out["reasoning_effort"] = "none"  # asked for explicitly: kept, it is OpenAI's own value
    elif req.reasoning is not None and req.reasoning.enabled:
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
