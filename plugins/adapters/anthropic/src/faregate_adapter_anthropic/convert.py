"""Anthropic Messages JSON ⇄ the canonical model. Pure functions and small stateful
stream translators; no I/O.

Usage convention: Anthropic reports ``input_tokens`` *without* cache reads and cache
writes; the canonical ``Usage.input_tokens`` includes both, so they are added on the way
in and subtracted on the way out.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from faregate.api import (
    ChatRequest,
    ChatResponse,
    ContentPart,
    GatewayError,
    ImagePart,
    JSONDecodeError,
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

log = logging.getLogger("faregate.adapter.anthropic")

DEFAULT_MAX_TOKENS = 4096
MIN_THINKING_BUDGET = 1024  # Anthropic rejects smaller budgets
# reasoning_effort → thinking budget; chosen so the OpenAI adapter's budget → effort
# mapping (<4096 low, <16384 medium, else high) gives the same effort back
EFFORT_BUDGET = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576, "xhigh": 32768}

STOP_FROM_ANTHROPIC: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
STOP_TO_ANTHROPIC: dict[str, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
    "error": "end_turn",
}

_TOOL_ID_BAD = re.compile(r"[^A-Za-z0-9_-]")


def tool_id_for_anthropic(call_id: str) -> str:
    """Anthropic requires tool ids matching ``^[A-Za-z0-9_-]+$``; other vendors'
    (e.g. ``functions.get:0``) are made to fit, the same way for calls and results."""
    cleaned = _TOOL_ID_BAD.sub("_", call_id)
    return cleaned or "toolu_unknown"


def new_tool_id() -> str:
    return "toolu_" + uuid.uuid4().hex[:24]


def stop_to_anthropic(reason: StopReason | None, stop_sequence: str | None) -> str:
    if stop_sequence:
        return "stop_sequence"
    return STOP_TO_ANTHROPIC.get(reason or "stop", "end_turn")


# ---- usage ------------------------------------------------------------------------------


class UsageTracker:
    """Anthropic usage arriving in pieces (message_start, then message_delta with
    cumulative totals): each field is *set*, never added, so nothing is counted twice."""

    __slots__ = ("cache_read", "cache_write", "input", "output", "seen", "thinking")

    def __init__(self) -> None:
        self.input = 0
        self.output = 0
        self.cache_read = 0
        self.cache_write = 0
        self.thinking = 0
        self.seen = False

    def update(self, u: Any) -> None:
        if not isinstance(u, dict):
            return
        self.seen = True
        for key, attr in (("input_tokens", "input"), ("output_tokens", "output"),
                          ("cache_read_input_tokens", "cache_read"),
                          ("cache_creation_input_tokens", "cache_write")):
            value = u.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(self, attr, value)
        details = u.get("output_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("thinking_tokens"), int):
            self.thinking = details["thinking_tokens"]

    def usage(self) -> Usage:
        return Usage(input_tokens=self.input + self.cache_read + self.cache_write, output_tokens=self.output,
                     cache_read_tokens=self.cache_read, cache_write_tokens=self.cache_write,
                     reasoning_tokens=self.thinking)


def parse_usage(u: Any) -> Usage | None:
    if not isinstance(u, dict):
        return None
    tracker = UsageTracker()
    tracker.update(u)
    return tracker.usage()


def render_usage(usage: Usage | None) -> dict[str, Any]:
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    out: dict[str, Any] = {
        "input_tokens": max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }
    if usage.reasoning_tokens:
        out["output_tokens_details"] = {"thinking_tokens": usage.reasoning_tokens}
    return out


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
        tools.append(Tool(name=tool["name"], description=tool.get("description"),
                          parameters=tool.get("input_schema")))
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
    reasoning = None
    thinking = body.get("thinking")
    if isinstance(thinking, dict):
        kind = thinking.get("type")
        if kind == "enabled":
            budget = thinking.get("budget_tokens")
            reasoning = Reasoning(budget_tokens=budget if isinstance(budget, int) else None)
        elif kind == "disabled":
            reasoning = Reasoning(enabled=False)
        elif kind == "adaptive":
            reasoning = Reasoning()
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
        reasoning=reasoning,
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


def _tool_input(arguments: str) -> dict[str, Any]:
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
                           "input": _tool_input(p.arguments)})
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


def effort_budget(reasoning: Reasoning) -> int:
    if reasoning.budget_tokens is not None:
        return max(MIN_THINKING_BUDGET, reasoning.budget_tokens)
    return EFFORT_BUDGET.get(reasoning.effort or "medium", EFFORT_BUDGET["medium"])


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
        tools = []
        for t in req.tools:
            tool: dict[str, Any] = {"name": t.name}
            if t.description is not None:
                tool["description"] = t.description
            tool["input_schema"] = t.parameters or {"type": "object", "properties": {}}
            tools.append(tool)
        out["tools"] = tools
        tc = req.tool_choice
        if tc is not None:
            choice: dict[str, Any] = {"type": {"auto": "auto", "required": "any", "tool": "tool",
                                               "none": "none"}[tc.mode]}
            if tc.mode == "tool":
                choice["name"] = tc.name or ""
            if tc.parallel is False and tc.mode != "none":
                choice["disable_parallel_tool_use"] = True
            out["tool_choice"] = choice
    if req.reasoning is not None and req.reasoning.enabled and _thinking_allowed(req, messages):
        budget = effort_budget(req.reasoning)
        if budget >= out["max_tokens"]:
            # Anthropic needs budget < max_tokens; keep the answer's own room
            out["max_tokens"] += budget
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


# ---- responses --------------------------------------------------------------------------


def parse_response(body: Any) -> ChatResponse:
    if not isinstance(body, dict) or not isinstance(body.get("content"), list):
        raise ValueError("not a Messages response")
    parts: list[ContentPart] = []
    for block in body["content"]:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(TextPart(str(block.get("text", ""))))
        elif kind == "thinking":
            parts.append(ReasoningPart(text=str(block.get("thinking", "")), signature=block.get("signature") or None))
        elif kind == "redacted_thinking":
            parts.append(ReasoningPart(redacted=str(block.get("data", ""))))
        elif kind == "tool_use":
            parts.append(ToolCallPart(id=str(block.get("id", "")), name=str(block.get("name", "")),
                                      arguments=json_dumps_str(block.get("input") or {})))
        # server tool blocks have no canonical home
    reason = body.get("stop_reason")
    return ChatResponse(
        id=str(body.get("id", "")), model=str(body.get("model", "")), message=Message("assistant", parts),
        stop_reason=STOP_FROM_ANTHROPIC.get(reason, "stop") if reason else None,
        stop_sequence=body.get("stop_sequence"), usage=parse_usage(body.get("usage")), created=int(time.time()),
    )


def render_response(resp: ChatResponse, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for p in resp.message.content:
        if isinstance(p, ReasoningPart):
            if p.redacted:
                content.append({"type": "redacted_thinking", "data": p.redacted})
            elif p.text or p.signature:
                content.append({"type": "thinking", "thinking": p.text, "signature": p.signature or ""})
        elif isinstance(p, TextPart):
            content.append({"type": "text", "text": p.text})
        elif isinstance(p, ToolCallPart):
            content.append({"type": "tool_use", "id": p.id or new_tool_id(), "name": p.name,
                            "input": _tool_input(p.arguments)})
    return {
        "id": resp.id if resp.id.startswith("msg_") else f"msg_{resp.id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_to_anthropic(resp.stop_reason, resp.stop_sequence),
        "stop_sequence": resp.stop_sequence,
        "usage": render_usage(resp.usage),
    }


# ---- streams: Anthropic events → canonical ------------------------------------------------


class EventParser(StreamParser):
    """Anthropic stream events → canonical stream events. Anthropic's block indices
    are already "content blocks in order of first appearance"."""

    def __init__(self) -> None:
        self.done = False
        self.usage = UsageTracker()
        self._tool_index: dict[int, int] = {}
        self._kinds: dict[int, str] = {}

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        obj = json_loads(data)
        if not isinstance(obj, dict):
            return []
        kind = obj.get("type") or event
        if kind == "message_start":
            msg = obj.get("message") or {}
            out: list[StreamEvent] = [StreamStart(id=str(msg.get("id", "")), model=str(msg.get("model", "")))]
            if isinstance(msg.get("usage"), dict):
                self.usage.update(msg["usage"])
                out.append(UsageEvent(self.usage.usage()))
            return out
        if kind == "content_block_start":
            index = int(obj.get("index", 0))
            block = obj.get("content_block") or {}
            btype = str(block.get("type") or "")
            self._kinds[index] = btype
            if btype == "text" and block.get("text"):
                return [TextDelta(index=index, text=str(block["text"]))]
            if btype == "thinking" and (block.get("thinking") or block.get("signature")):
                return [ReasoningDelta(index=index, text=str(block.get("thinking") or ""),
                                       signature=block.get("signature") or None)]
            if btype == "tool_use":
                tool_index = self._tool_index[index] = len(self._tool_index)
                return [ToolCallDelta(index=index, tool_index=tool_index, id=str(block.get("id", "")),
                                      name=str(block.get("name", "")))]
            if btype == "redacted_thinking" and isinstance(block.get("data"), str):
                return [ReasoningDelta(index=index, redacted=block["data"])]
            return []  # server tool blocks have no canonical stream form
        if kind == "content_block_delta":
            index = int(obj.get("index", 0))
            delta = obj.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                return [TextDelta(index=index, text=str(delta.get("text", "")))]
            if dtype == "thinking_delta":
                return [ReasoningDelta(index=index, text=str(delta.get("thinking", "")))]
            if dtype == "signature_delta":
                return [ReasoningDelta(index=index, signature=str(delta.get("signature", "")))]
            if dtype == "input_json_delta" and index in self._tool_index:
                return [ToolCallDelta(index=index, tool_index=self._tool_index[index],
                                      arguments=str(delta.get("partial_json", "")))]
            return []
        if kind == "message_delta":
            delta = obj.get("delta") or {}
            reason = delta.get("stop_reason")
            out = [StreamStop(stop_reason=STOP_FROM_ANTHROPIC.get(reason, "stop") if reason else None,
                              stop_sequence=delta.get("stop_sequence"))]
            if isinstance(obj.get("usage"), dict):
                self.usage.update(obj["usage"])
                out.append(UsageEvent(self.usage.usage()))
            return out
        if kind == "message_stop":
            self.done = True
            return []
        if kind == "error":
            err = obj.get("error") or {}
            etype = str(err.get("type") or "api_error")
            return [StreamError(message=str(err.get("message") or "upstream error"), type=etype, code=etype)]
        return []  # ping, content_block_stop, unknown future events


# ---- streams: canonical → Anthropic events -------------------------------------------------


def sse(event: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + json_dumps(payload) + b"\n\n"


class EventEncoder:
    """Canonical stream events → Anthropic's exact event sequence. Blocks are opened
    and closed one at a time with contiguous indices from 0, whatever the canonical
    indices were (new-api #5483: gaps crash the SDK, which indexes a list)."""

    def __init__(self, model: str, request_id: str) -> None:
        self.model = model
        self.id = f"msg_{request_id}"
        self.started = False
        self.next_index = 0
        self.open: tuple[int, str] | None = None  # (canonical index, block type)
        self.closed: set[tuple[int, str]] = set()
        self.stop_reason: StopReason | None = None
        self.stop_sequence: str | None = None
        self.finished = False

    def _start(self) -> bytes:
        if self.started:
            return b""
        self.started = True
        return sse("message_start", {"type": "message_start", "message": {
            "id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}})

    def _close(self) -> bytes:
        if self.open is None:
            return b""
        self.closed.add(self.open)
        self.open = None
        return sse("content_block_stop", {"type": "content_block_stop", "index": self.next_index - 1})

    def _block(self, key: tuple[int, str], content_block: dict[str, Any]) -> bytes:
        """Make ``key`` the open block; returns the bytes that got it there."""
        if self.open == key:
            return b""
        out = self._start() + self._close()
        self.open = key
        out += sse("content_block_start", {"type": "content_block_start", "index": self.next_index,
                                           "content_block": content_block})
        self.next_index += 1
        return out

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return sse("content_block_delta", {"type": "content_block_delta", "index": self.next_index - 1,
                                           "delta": delta})

    def encode(self, event: StreamEvent) -> bytes:
        if isinstance(event, StreamStart):
            return self._start()
        if isinstance(event, TextDelta):
            if not event.text:
                return b""
            out = self._block((event.index, "text"), {"type": "text", "text": ""})
            return out + self._delta({"type": "text_delta", "text": event.text})
        if isinstance(event, ReasoningDelta):
            if event.redacted:  # a whole block in one event: opened with its data, closed by the next
                return self._block((event.index, "redacted_thinking"),
                                   {"type": "redacted_thinking", "data": event.redacted})
            if not event.text and not event.signature:
                return b""
            out = self._block((event.index, "thinking"), {"type": "thinking", "thinking": "", "signature": ""})
            if event.text:
                out += self._delta({"type": "thinking_delta", "thinking": event.text})
            if event.signature:
                out += self._delta({"type": "signature_delta", "signature": event.signature})
            return out
        if isinstance(event, ToolCallDelta):
            key = (event.index, "tool_use")
            if key in self.closed:
                # a fragment for a call already closed (upstreams interleaving parallel
                # calls): Anthropic's sequence cannot reopen a block
                log.warning("dropped a late tool-call fragment for block %s", event.index)
                return b""
            out = b""
            if self.open != key:
                out = self._block(key, {"type": "tool_use", "id": event.id or new_tool_id(),
                                        "name": event.name or "", "input": {}})
            if event.arguments:
                out += self._delta({"type": "input_json_delta", "partial_json": event.arguments})
            return out
        if isinstance(event, StreamStop):
            self.stop_reason = event.stop_reason
            self.stop_sequence = event.stop_sequence
            return b""
        return b""  # usage and errors reach finish()/error() through the relay

    def finish(self, usage: Usage | None) -> bytes:
        if self.finished:
            return b""
        self.finished = True
        out = self._start() + self._close()
        out += sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop_to_anthropic(self.stop_reason,
                                                                                self.stop_sequence),
                                               "stop_sequence": self.stop_sequence},
                                     "usage": render_usage(usage)})
        return out + sse("message_stop", {"type": "message_stop"})


# ---- errors -------------------------------------------------------------------------------

ANTHROPIC_ERROR_TYPES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_STATUS_TYPES = {status: kind for kind, status in ANTHROPIC_ERROR_TYPES.items()}
_NOT_FOUND_CODES = {"model_not_found"}


def anthropic_error(err: GatewayError) -> tuple[int, str]:
    """The Anthropic status and error type for a gateway error: Anthropic's own types
    pass through; others map by status onto the set the SDK knows."""
    if err.type in ANTHROPIC_ERROR_TYPES and err.upstream:
        return err.status, err.type
    status = err.status
    if err.code in _NOT_FOUND_CODES:
        status = 404  # no channel for the model: not worth a retry (the SDK retries 5xx)
    elif status == 408:
        status = 504
    elif status == 503:
        status = 529
    elif status not in _STATUS_TYPES:
        status = 500 if status >= 500 else 400
    return status, _STATUS_TYPES[status]


def error_payload(err: GatewayError, message: str | None = None) -> tuple[int, dict[str, Any]]:
    status, kind = anthropic_error(err)
    return status, {"type": "error", "error": {"type": kind, "message": message or err.message}}
