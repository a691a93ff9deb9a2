"""The canonical :class:`ChatRequest` as a Cohere v2 Chat body (``POST /v2/chat``). Pure
functions; no I/O.

Cohere's ranges are narrower than OpenAI's: ``temperature`` 0–1, ``p`` 0.01–0.99, ``k``
0–500, penalties 0–1; values outside are clamped (the client's intent, within what Cohere
takes). What Cohere cannot take is a 400 naming the field before any upstream call:
``n`` above 1, images inside tool results."""

from __future__ import annotations

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
)

#: Cohere's bounds of the sampling parameters (its v2 Chat reference)
TEMPERATURE = (0.0, 1.0)
TOP_P = (0.01, 0.99)
TOP_K = (0, 500)
PENALTY = (0.0, 1.0)
#: what a channel's ``safety_mode`` setting may say (new-api's COHERE_SAFETY_SETTING; none: Cohere's default)
SAFETY_MODES = ("CONTEXTUAL", "STRICT")
#: reasoning efforts mapped to a thinking budget (as the Anthropic adapter maps them)
EFFORT_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576}


def _clamp(value: float, bounds: tuple[float, float]) -> float:
    return min(bounds[1], max(bounds[0], float(value)))


def _image_url(part: ImagePart) -> str:
    if part.data is not None:
        return f"data:{part.media_type or 'image/png'};base64,{part.data}"
    return part.url or ""


def _user_content(msg: Message) -> str | list[dict[str, Any]]:
    """A user turn: a string when it is text only, else text and ``image_url`` parts."""
    parts = [p for p in msg.content if isinstance(p, TextPart | ImagePart)]
    if all(isinstance(p, TextPart) for p in parts):
        return "".join(p.text for p in parts if isinstance(p, TextPart))
    out: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, TextPart):
            if p.text:
                out.append({"type": "text", "text": p.text})
        else:
            image: dict[str, Any] = {"url": _image_url(p)}
            if p.detail in ("auto", "low", "high"):
                image["detail"] = p.detail
            out.append({"type": "image_url", "image_url": image})
    return out


def _assistant(msg: Message) -> dict[str, Any] | None:
    """An assistant turn: text and thinking as content, calls as ``tool_calls``; reasoning
    before calls is Cohere's ``tool_plan`` (what its answers carry there)."""
    calls = [p for p in msg.content if isinstance(p, ToolCallPart)]
    reasoning = "".join(p.text for p in msg.content if isinstance(p, ReasoningPart))
    text = "".join(p.text for p in msg.content if isinstance(p, TextPart))
    out: dict[str, Any] = {"role": "assistant"}
    content: list[dict[str, Any]] = []
    if reasoning and not calls:
        content.append({"type": "thinking", "thinking": reasoning})
    if text:
        content.append({"type": "text", "text": text})
    if content:
        out["content"] = content
    if calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.name, "arguments": c.arguments or "{}"}} for c in calls]
        if reasoning:
            out["tool_plan"] = reasoning
    return out if len(out) > 1 else None


def _tool_result(part: ToolResultPart) -> dict[str, Any]:
    if any(isinstance(p, ImagePart) for p in part.content):
        raise bad_request("a Cohere channel takes text tool results only (this one holds an image)",
                          param="messages")
    text = "".join(p.text for p in part.content if isinstance(p, TextPart))
    return {"role": "tool", "tool_call_id": part.tool_call_id, "content": text}


def render_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role in ("system", "developer"):
            text = msg.text()
            if not text:
                continue
            if out and out[-1]["role"] == "system":  # consecutive system and developer turns are one
                out[-1]["content"] += "\n\n" + text
            else:
                out.append({"role": "system", "content": text})
        elif msg.role == "assistant":
            turn = _assistant(msg)
            if turn is not None:
                out.append(turn)
        elif msg.role == "tool":
            out.extend(_tool_result(p) for p in msg.content if isinstance(p, ToolResultPart))
        else:
            out.extend(_tool_result(p) for p in msg.content if isinstance(p, ToolResultPart))
            content = _user_content(msg)
            if content:
                out.append({"role": "user", "content": content})
    if not any(m["role"] != "system" for m in out):
        raise bad_request("messages: at least one user message is required for a Cohere channel", param="messages")
    return out


def _tool(tool: Tool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name,
                                "parameters": tool.parameters or {"type": "object", "properties": {}}}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def _response_format(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """OpenAI's ``json_schema`` / ``json_object`` as Cohere's ``json_object`` (with its schema)."""
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        spec = value.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return {"type": "json_object", "json_schema": schema} if isinstance(schema, dict) else {"type": "json_object"}
    return None


def _thinking(request: ChatRequest) -> dict[str, Any] | None:
    reasoning = request.reasoning
    if reasoning is None:
        return None
    if not reasoning.enabled or reasoning.effort in ("none", "minimal"):
        return {"type": "disabled"}
    budget = reasoning.budget_tokens or EFFORT_BUDGETS.get(reasoning.effort or "")
    return {"type": "enabled", "token_budget": budget} if budget else {"type": "enabled"}


def render_request(request: ChatRequest, model: str, stream: bool, safety_mode: Any = None) -> dict[str, Any]:
    """The v2 Chat body for ``model``; ``stream`` only when streaming (Cohere's default is off)."""
    if request.n is not None and request.n > 1:
        raise bad_request("a Cohere channel answers one choice: n must be 1", param="n")
    body: dict[str, Any] = {"model": model, "messages": render_messages(request.messages)}
    tools = request.tools
    choice = request.tool_choice
    if tools:
        if choice is not None and choice.mode == "tool":
            # Cohere has no named choice: only that tool is offered, and a call is required
            tools = [t for t in tools if t.name == choice.name]
            if not tools:
                raise bad_request(f"tool_choice names a tool that is not defined: {choice.name}",
                                  param="tool_choice")
        body["tools"] = [_tool(t) for t in tools]
        if choice is not None and choice.mode in ("required", "tool"):
            body["tool_choice"] = "REQUIRED"
        elif choice is not None and choice.mode == "none":
            body["tool_choice"] = "NONE"
        if any(t.strict for t in tools):
            body["strict_tools"] = True
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if request.temperature is not None:
        body["temperature"] = _clamp(request.temperature, TEMPERATURE)
    if request.top_p is not None:
        body["p"] = _clamp(request.top_p, TOP_P)
    if request.top_k is not None:
        body["k"] = int(_clamp(request.top_k, TOP_K))
    if request.seed is not None and request.seed >= 0:
        body["seed"] = request.seed
    if request.frequency_penalty is not None:
        body["frequency_penalty"] = _clamp(request.frequency_penalty, PENALTY)
    if request.presence_penalty is not None:
        body["presence_penalty"] = _clamp(request.presence_penalty, PENALTY)
    response_format = _response_format(request.response_format)
    if response_format is not None:
        body["response_format"] = response_format
    thinking = _thinking(request)
    if thinking is not None:
        body["thinking"] = thinking
    if safety_mode in SAFETY_MODES:
        body["safety_mode"] = safety_mode
    if stream:
        body["stream"] = True
    return body
