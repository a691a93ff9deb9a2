"""The canonical :class:`ChatRequest` as a Bedrock Converse body (``POST
/model/{modelId}/converse``): system blocks, alternating user / assistant messages of
content blocks, ``inferenceConfig`` and ``toolConfig``. Pure functions; no I/O.

Converse takes images as bytes only (an image URL is a 400 naming the field), tool ids and
names of ``[a-zA-Z0-9_-]`` (others are made to fit, the same way for calls and results),
no blank text, and a ``toolConfig`` whenever the conversation holds tool calls. What it has
no field for (``top_k``, penalties, seeds, response formats, reasoning settings, which each
model reads differently from ``additionalModelRequestFields``) is not sent."""

from __future__ import annotations

import logging
import re
from typing import Any

from faregate.api import (
    ChatRequest,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    Tool,
    ToolCallPart,
    ToolResultPart,
    bad_request,
    json_loads,
)

log = logging.getLogger("faregate.adapter.bedrock")

#: ``ImageBlock.format`` by media type
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif",
                 "image/webp": "webp"}
_ID_BAD = re.compile(r"[^A-Za-z0-9_-]")
MAX_ID = 64
#: Converse allows at most this many stop sequences
MAX_STOP = 4
CACHE_POINT = {"cachePoint": {"type": "default"}}


def converse_id(value: str, fallback: str = "tool") -> str:
    """A tool-use id or tool name as Converse accepts it (``[a-zA-Z0-9_-]+``, 64 at most)."""
    return _ID_BAD.sub("_", value)[:MAX_ID] or fallback


def _json_object(text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = json_loads(text)
    except ValueError:
        log.warning("tool call arguments are not valid JSON; sent as an empty object")
        return {}
    return value if isinstance(value, dict) else {"value": value}


def _image(part: ImagePart, where: str) -> dict[str, Any]:
    if part.data is None:
        raise bad_request(f"{where}: a Bedrock Converse model takes images as base64 data, not URLs", param=where)
    fmt = IMAGE_FORMATS.get((part.media_type or "image/png").lower())
    if fmt is None:
        raise bad_request(f"{where}: image type {part.media_type!r} is not one Converse takes (png, jpeg, gif, webp)",
                          param=where)
    return {"image": {"format": fmt, "source": {"bytes": part.data}}}


def _text(part: TextPart) -> list[dict[str, Any]]:
    if not part.text:
        return []  # Converse refuses blank text blocks
    return [{"text": part.text}, CACHE_POINT] if part.cache_control else [{"text": part.text}]


def _result(part: ToolResultPart, where: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for p in part.content:
        if isinstance(p, TextPart) and p.text:
            content.append({"text": p.text})
        elif isinstance(p, ImagePart):
            content.append(_image(p, where))
    result: dict[str, Any] = {"toolUseId": converse_id(part.tool_call_id), "content": content or [{"json": {}}]}
    if part.is_error:
        result["status"] = "error"
    return {"toolResult": result}


def _assistant(msg: Message, where: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for p in msg.content:
        if isinstance(p, ReasoningPart):
            if p.redacted:
                blocks.append({"reasoningContent": {"redactedContent": p.redacted}})
            elif p.signature and p.text:
                blocks.append({"reasoningContent": {"reasoningText": {"text": p.text, "signature": p.signature}}})
            # unsigned reasoning (another vendor's) cannot be verified by the model: dropped
        elif isinstance(p, TextPart):
            blocks.extend(_text(p))
        elif isinstance(p, ImagePart):
            blocks.append(_image(p, where))
        elif isinstance(p, ToolCallPart):
            blocks.append({"toolUse": {"toolUseId": converse_id(p.id), "name": converse_id(p.name),
                                       "input": _json_object(p.arguments)}})
    return blocks


def _user(msg: Message, where: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for p in msg.content:
        if isinstance(p, ToolResultPart):
            blocks.append(_result(p, where))
        elif isinstance(p, TextPart):
            blocks.extend(_text(p))
        elif isinstance(p, ImagePart):
            blocks.append(_image(p, where))
    return blocks


def _tool_spec(i: int, tool: Tool) -> dict[str, Any]:
    schema = dict(tool.parameters) if tool.parameters else {"properties": {}}
    kind = schema.setdefault("type", "object")
    if kind != "object":
        raise bad_request(f"tools[{i}].function.parameters.type must be 'object' (got {kind!r})",
                          param=f"tools[{i}].function.parameters")
    spec: dict[str, Any] = {"name": converse_id(tool.name), "inputSchema": {"json": schema}}
    if tool.description:
        spec["description"] = tool.description
    return {"toolSpec": spec}


def _tool_config(req: ChatRequest, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Converse needs the tools declared whenever the conversation holds tool blocks: a
    client that sends no tools with its history gets them declared from the calls made."""
    used = [b["toolUse"]["name"] for m in messages for b in m["content"] if "toolUse" in b]
    has_tool_blocks = bool(used) or any("toolResult" in b for m in messages for b in m["content"])
    choice = req.tool_choice
    if not req.tools:
        if not has_tool_blocks:
            return None
        names = list(dict.fromkeys(used)) or ["tool"]
        return {"tools": [{"toolSpec": {"name": n, "inputSchema": {"json": {"type": "object"}}}} for n in names]}
    if choice is not None and choice.mode == "none" and not has_tool_blocks:
        return None  # Converse has no "none": not offering the tools is the same
    config: dict[str, Any] = {"tools": [_tool_spec(i, t) for i, t in enumerate(req.tools)]}
    if choice is not None and choice.mode == "required":
        config["toolChoice"] = {"any": {}}
    elif choice is not None and choice.mode == "tool":
        config["toolChoice"] = {"tool": {"name": converse_id(choice.name or "")}}
    elif choice is not None and choice.mode == "auto":
        config["toolChoice"] = {"auto": {}}
    return config


def render_request(req: ChatRequest) -> dict[str, Any]:
    """The canonical request as a Converse body (the model goes in the URL)."""
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []

    def append(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if messages and messages[-1]["role"] == role:  # Converse wants the roles to alternate
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for i, msg in enumerate(req.messages):
        where = f"messages[{i}]"
        if msg.role in ("system", "developer"):
            for part in msg.content:
                if isinstance(part, TextPart):
                    system.extend(_text(part))
        elif msg.role == "assistant":
            append("assistant", _assistant(msg, where))
        else:
            append("user", _user(msg, where))
    if not messages or messages[0]["role"] != "user":
        raise bad_request("messages: the conversation must start with a user message for this channel",
                          param="messages")
    out: dict[str, Any] = {"messages": messages}
    if system:
        out["system"] = system
    config: dict[str, Any] = {}
    if req.max_tokens is not None:
        config["maxTokens"] = req.max_tokens
    if req.temperature is not None:
        config["temperature"] = min(1.0, max(0.0, float(req.temperature)))  # OpenAI allows up to 2
    if req.top_p is not None:
        config["topP"] = req.top_p
    if req.stop:
        if len(req.stop) > MAX_STOP:
            raise bad_request(f"stop: at most {MAX_STOP} stop sequences for this channel", param="stop")
        config["stopSequences"] = list(req.stop)
    if config:
        out["inferenceConfig"] = config
    tools = _tool_config(req, messages)
    if tools is not None:
        out["toolConfig"] = tools
    return out

