"""Anthropic Messages request bodies ⇄ the canonical :class:`ChatRequest`: system,
messages and content blocks, tools and tool choice, thinking budgets, tool ids. Pure
functions; no I/O."""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any

from faregate.api import (
    ChatRequest,
    ContentPart,
    ImagePart,
    JSONDecodeError,
    Message,
    ReasoningPart,
    TextPart,
    Tool,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    bad_request,
    json_dumps_str,
    json_loads,
)
from faregate_adapter_anthropic import thinking

log = logging.getLogger("faregate.adapter.anthropic")

DEFAULT_MAX_TOKENS = 4096

_TOOL_ID_BAD = re.compile(r"[^A-Za-z0-9_-]")


def tool_id_for_anthropic(call_id: str) -> str:
    """Anthropic requires tool ids matching ``^[A-Za-z0-9_-]+$``; other vendors'
    (e.g. ``functions.get:0``) are made to fit, the same way for calls and results."""
    cleaned = _TOOL_ID_BAD.sub("_", call_id)
    return cleaned or "toolu_unknown"


def new_tool_id() -> str:
    return "toolu_" + uuid.uuid4().hex[:24]


# ---- requests: Anthropic → canonical ----------------------------------------------------


def _image(block: dict[str, Any], where: str) -> ImagePart:
    source = block.get("source")
    if not isinstance(source, dict):
        raise bad_request(f"{where}.source must be an object", param=where)
    kind = source.get("type")
    if kind == "base64":
        return ImagePart(data=str(source.get("data", "")), media_type=source.get("media_type"))
    if kind == "url":
        return ImagePart(url=str(source.get("url", "")))
    raise bad_request(f"{where}: image source type {kind!r} is not supported by this conversion", param=where)


def _result_content(content: Any, where: str) -> list[TextPart | ImagePart]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if not isinstance(content, list):
        raise bad_request(f"{where}.content must be a string or an array", param=where)
    parts: list[TextPart | ImagePart] = []
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            raise bad_request(f"{where}.content[{i}] must be an object", param=where)
        kind = block.get("type")
        if kind == "text":
            parts.append(TextPart(str(block.get("text", ""))))
        elif kind == "image":
            parts.append(_image(block, f"{where}.content[{i}]"))
        else:
            raise bad_request(f"{where}.content[{i}]: type {kind!r} is not supported by this conversion",
                              param=where)
    return parts


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        raise bad_request(f"{where}.content must be a string or an array", param=f"{where}.content")
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            raise bad_request(f"{where}.content[{i}] must be an object", param=f"{where}.content")
    return content


def parse_system(system: Any) -> list[TextPart]:
    if system is None:
        return []
    if isinstance(system, str):
        return [TextPart(system)] if system else []
    if not isinstance(system, list):
        raise bad_request("system must be a string or an array of text blocks", param="system")
    parts = []
    for i, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise bad_request(f"system[{i}] must be a text block", param="system")
        parts.append(TextPart(str(block.get("text", "")), cache_control=block.get("cache_control")))
    return parts


def parse_request(body: dict[str, Any]) -> ChatRequest:
    """A Messages request body as a canonical request (only for conversions: a Messages
    client on an Anthropic channel is passed through untouched)."""
    messages: list[Message] = []
    system = parse_system(body.get("system"))
    if system:
        messages.append(Message("system", list(system)))
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise bad_request("messages: at least one message is required", param="messages")
    for i, msg in enumerate(raw_messages):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise bad_request(f"{where} must be an object", param="messages")
        role = msg.get("role")
        if role not in ("user", "assistant"):
            raise bad_request(f"{where}.role must be 'user' or 'assistant'", param=f"{where}.role")
        results: list[ContentPart] = []
        parts: list[ContentPart] = []
        for j, block in enumerate(_blocks(msg.get("content"), where)):
            bwhere = f"{where}.content[{j}]"
            kind = block.get("type")
            if kind == "text":
                parts.append(TextPart(str(block.get("text", "")), cache_control=block.get("cache_control")))
            elif kind == "image":
                parts.append(_image(block, bwhere))
            elif kind == "tool_use" and role == "assistant":
                tool_input = block.get("input")
                parts.append(ToolCallPart(id=str(block.get("id", "")), name=str(block.get("name", "")),
                                          arguments=json_dumps_str(tool_input if tool_input is not None
                                                                       else {})))
            elif kind == "tool_result" and role == "user":
                results.append(ToolResultPart(tool_call_id=str(block.get("tool_use_id", "")),
                                              content=_result_content(block.get("content"), bwhere),
                                              is_error=bool(block.get("is_error"))))
            elif kind == "thinking" and role == "assistant":
                parts.append(ReasoningPart(text=str(block.get("thinking", "")),
                                           signature=block.get("signature") or None))
            elif kind == "redacted_thinking" and role == "assistant":
                parts.append(ReasoningPart(redacted=str(block.get("data", ""))))
            else:
                raise bad_request(f"{bwhere}: content block type {kind!r} is not supported on this channel",
                                  param=bwhere)
        # canonical tool results live in role "tool" messages, before the user's text
        if results:
            messages.append(Message("tool", results))
        if parts or not results:
            messages.append(Message(role, parts))
    tools: list[Tool] = []
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise bad_request(f"tools[{i}].name is required", param=f"tools[{i}]")
        kind = tool.get("type")
        if kind not in (None, "custom") or "input_schema" not in tool:
            raise bad_request(f"tools[{i}]: server tool {kind!r} is not supported on this channel",
                              param=f"tools[{i}]")
        strict = tool.get("strict")
        tools.append(Tool(name=tool["name"], description=tool.get("description"),
                          parameters=tool.get("input_schema"), strict=strict if isinstance(strict, bool) else None))
    tool_choice = None
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        kind = choice.get("type")
        mode = {"auto": "auto", "any": "required", "tool": "tool", "none": "none"}.get(str(kind))
        if mode is None:
            raise bad_request(f"tool_choice.type {kind!r} is invalid", param="tool_choice")
        tool_choice = ToolChoice(mode=mode, name=choice.get("name") if mode == "tool" else None)  # type: ignore[arg-type]
        if "disable_parallel_tool_use" in choice:
            tool_choice.parallel = not choice["disable_parallel_tool_use"]
    stops = body.get("stop_sequences")
    metadata = body.get("metadata")
    user = metadata.get("user_id") if isinstance(metadata, dict) else None
    # Anthropic-only fields (service_tier, container, mcp_servers …) have no canonical
    # home and must not leak into another vendor's body: they are dropped here.
    return ChatRequest(
        model=str(body.get("model", "")),
        messages=messages,
        stream=body.get("stream") is True,
        max_tokens=body.get("max_tokens"),
        temperature=body.get("temperature"),
        top_p=body.get("top_p"),
        top_k=body.get("top_k"),
        stop=[s for s in stops if isinstance(s, str)] if isinstance(stops, list) else [],
        tools=tools,
        tool_choice=tool_choice,
        reasoning=thinking.parse_reasoning(body),
        response_format=thinking.parse_response_format(body),
        user=user if isinstance(user, str) else None,
        include_usage=True,
    )


# ---- requests: canonical → Anthropic ----------------------------------------------------


def _render_text(part: TextPart) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": part.text}
    if part.cache_control:
        block["cache_control"] = part.cache_control
    return block


def _render_image(part: ImagePart) -> dict[str, Any]:
    if part.data is not None:
        source = {"type": "base64", "media_type": part.media_type or "image/png", "data": part.data}
    else:
        source = {"type": "url", "url": part.url or ""}
    return {"type": "image", "source": source}


def _render_visible(parts: list[TextPart | ImagePart] | list[ContentPart]) -> list[dict[str, Any]]:
    out = []
    for p in parts:
        if isinstance(p, TextPart):
            if p.text:  # Anthropic rejects empty text blocks
                out.append(_render_text(p))
        elif isinstance(p, ImagePart):
            out.append(_render_image(p))
    return out


def tool_input(arguments: str) -> dict[str, Any]:
    if not arguments.strip():
        return {}
    try:
        value = json_loads(arguments)
    except JSONDecodeError:
        # models occasionally emit broken JSON; the turn must still be sendable back
        log.warning("tool call arguments are not valid JSON; sent as an empty object")
        return {}
    return value if isinstance(value, dict) else {"value": value}


def _render_assistant(msg: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for p in msg.content:
        if isinstance(p, ReasoningPart):
            if p.redacted:
                blocks.append({"type": "redacted_thinking", "data": p.redacted})
            elif p.signature:
                blocks.append({"type": "thinking", "thinking": p.text, "signature": p.signature})
            # unsigned reasoning (from another vendor) cannot be verified by Anthropic: dropped
        elif isinstance(p, TextPart):
            if p.text:
                blocks.append(_render_text(p))
        elif isinstance(p, ImagePart):
            blocks.append(_render_image(p))
        elif isinstance(p, ToolCallPart):
            blocks.append({"type": "tool_use", "id": tool_id_for_anthropic(p.id), "name": p.name,
                           "input": tool_input(p.arguments)})
    return blocks


def _render_tool_result(part: ToolResultPart) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id_for_anthropic(part.tool_call_id)}
    content = list(part.content)
    if content and all(isinstance(p, TextPart) for p in content):
        block["content"] = "".join(p.text for p in content if isinstance(p, TextPart))
    elif content:
        block["content"] = _render_visible(content)
    if part.is_error:
        block["is_error"] = True
    return block


def render_request(req: ChatRequest, model: str, default_max_tokens: int = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
    """The canonical request as a Messages body. Canonical ``extra`` (another vendor's
    leftovers) is not sent: Anthropic rejects unknown fields."""
    system: list[TextPart] = []
    messages: list[dict[str, Any]] = []

    def append(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        # consecutive same-role turns are merged (tool results + the user's next text)
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for msg in req.messages:
        if msg.role in ("system", "developer"):
            system.extend(p for p in msg.content if isinstance(p, TextPart) and p.text)
        elif msg.role == "tool":
            append("user", [_render_tool_result(p) for p in msg.content if isinstance(p, ToolResultPart)])
        elif msg.role == "assistant":
            append("assistant", _render_assistant(msg))
        else:
            results = [_render_tool_result(p) for p in msg.content if isinstance(p, ToolResultPart)]
            append("user", results + _render_visible([p for p in msg.content if isinstance(p, TextPart | ImagePart)]))
    if not messages:
        # only system/developer turns: Anthropic answers 400 to "messages": [], so the
        # client hears it in its own format before anything goes upstream
        raise bad_request("messages: at least one user or assistant message is required "
                          "(system and developer messages alone cannot be sent to this channel)",
                          param="messages")
    out: dict[str, Any] = {"model": model, "max_tokens": req.max_tokens or default_max_tokens,
                           "messages": messages}
    if system:
        if len(system) == 1 and not system[0].cache_control:
            out["system"] = system[0].text
        else:
            out["system"] = [_render_text(p) for p in system]
    if req.stop:
        out["stop_sequences"] = list(req.stop)
    if req.temperature is not None:
        out["temperature"] = min(1.0, max(0.0, float(req.temperature)))  # OpenAI allows up to 2
    if req.top_p is not None:
        out["top_p"] = req.top_p
    if req.top_k is not None:
        out["top_k"] = req.top_k
    if req.user:
        out["metadata"] = {"user_id": req.user}
    if req.tools:
        out["tools"] = [_render_tool(i, t) for i, t in enumerate(req.tools)]
        tc = req.tool_choice
        if tc is not None:
            choice: dict[str, Any] = {"type": {"auto": "auto", "required": "any", "tool": "tool",
                                               "none": "none"}[tc.mode]}
            if tc.mode == "tool":
                choice["name"] = tc.name or ""
            if tc.parallel is False and tc.mode != "none":
                choice["disable_parallel_tool_use"] = True
            out["tool_choice"] = choice
    output_format = thinking.render_output_format(req)
    if output_format is not None:
        out["output_config"] = {"format": output_format}
    budget: int | None = None
    if req.reasoning is not None and thinking.wants_thinking(req.reasoning) and _thinking_allowed(req, messages):
        budget, out["max_tokens"] = thinking.fit_budget(thinking.effort_budget(req.reasoning), out["max_tokens"],
                                                        client_bound=req.max_tokens is not None)
    if budget is not None:
        out["thinking"] = {"type": "enabled", "budget_tokens": budget}
        # sampling knobs Anthropic forbids with thinking
        out.pop("top_k", None)
        if out.get("temperature") not in (None, 1, 1.0):
            out.pop("temperature")
        if "top_p" in out and not 0.95 <= out["top_p"] <= 1:
            out.pop("top_p")
    if req.stream:
        out["stream"] = True
    return out


def _render_tool(i: int, t: Tool) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": t.name}
    if t.description is not None:
        tool["description"] = t.description
    # Anthropic requires an object schema with ``type: object``; OpenAI lets it be left out
    schema = dict(t.parameters) if t.parameters else {"properties": {}}
    kind = schema.setdefault("type", "object")
    if kind != "object":
        raise bad_request(f"tools[{i}].function.parameters.type must be 'object' (got {kind!r})",
                          param=f"tools[{i}].function.parameters")
    tool["input_schema"] = schema
    if t.strict is not None:
        tool["strict"] = t.strict
    return tool


def _thinking_allowed(req: ChatRequest, messages: list[dict[str, Any]]) -> bool:
    """Thinking cannot be on when the tool choice forces a tool, nor when the turn in
    progress (the last assistant message with tool calls) has no signed thinking block
    (clients of other formats cannot give signatures back): Anthropic would answer 400."""
    tc = req.tool_choice
    if tc is not None and req.tools and tc.mode in ("required", "tool"):
        return False
    for msg in reversed(messages):
        if msg["role"] != "assistant":
            continue
        blocks = msg["content"]
        if any(b.get("type") == "tool_use" for b in blocks):
            return blocks[0].get("type") in ("thinking", "redacted_thinking")
        return True
    return True

