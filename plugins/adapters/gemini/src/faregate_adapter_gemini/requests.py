"""``GenerateContentRequest`` bodies ⇄ the canonical :class:`ChatRequest`: the system
instruction, the turns (``user`` / ``model``) and their parts, function declarations,
calls and responses, tool choice and ``generationConfig``. Pure functions; no I/O.

Gemini's function calls need not carry ids; canonically every call has one, so a call
without one gets an id here, and a ``functionResponse`` without one answers the oldest
unanswered call of its name in the turn before. Gemini-only fields with no canonical
home (``safetySettings``, ``cachedContent``, server tools) are not carried to other
vendors: the ones that change the answer are refused (400), safety settings dropped."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from faregate.api import (
    ChatRequest,
    ContentPart,
    ImagePart,
    Message,
    TextPart,
    Tool,
    ToolCallPart,
    ToolResultPart,
    bad_request,
)
from faregate_adapter_gemini import config as gen_config
from faregate_adapter_gemini.fields import get
from faregate_adapter_gemini.parts import (
    parse_image,
    parse_model_part,
    parse_visible_part,
    render_image,
    render_model_parts,
    response_object,
    response_text,
)
from faregate_adapter_gemini.schema_map import to_json_schema

# ---- Gemini → canonical ------------------------------------------------------------------


def _parse_system(system: Any) -> Message | None:
    if not isinstance(system, dict):
        return None
    texts: list[ContentPart] = []
    for i, part in enumerate(get(system, "parts") or []):
        text = get(part, "text") if isinstance(part, dict) else None
        if not isinstance(text, str):
            raise bad_request(f"systemInstruction.parts[{i}]: only text can be converted for this channel",
                              param=f"systemInstruction.parts[{i}]")
        if text:
            texts.append(TextPart(text))
    return Message("system", texts) if texts else None


def _function_result(response: dict[str, Any], where: str) -> list[TextPart | ImagePart]:
    content: list[TextPart | ImagePart] = [TextPart(response_text(get(response, "response")))]
    for k, part in enumerate(get(response, "parts") or []):  # multimodal results: images only
        if isinstance(part, dict):
            content.append(parse_image(part, f"{where}.functionResponse.parts[{k}]"))
    return content


class _Calls:
    """The function calls of the last model turn not answered yet, oldest first per name."""

    def __init__(self) -> None:
        self.pending: dict[str, deque[str]] = {}

    def model_turn(self, parts: list[ContentPart]) -> None:
        self.pending = {}
        for p in parts:
            if isinstance(p, ToolCallPart):
                self.pending.setdefault(p.name, deque()).append(p.id)

    def answer(self, name: str, call_id: Any, where: str) -> str:
        queue = self.pending.get(name)
        if isinstance(call_id, str) and call_id:
            if queue and call_id in queue:
                queue.remove(call_id)
            return call_id
        if not queue:
            raise bad_request(f"{where}.functionResponse: no call of {name!r} in the model turn before it to "
                              "answer", param=f"{where}.functionResponse")
        return queue.popleft()


def parse_turns(contents: list[Any]) -> list[Message]:
    messages: list[Message] = []
    calls = _Calls()
    for i, content in enumerate(contents):
        where = f"contents[{i}]"
        role = get(content, "role") or "user"
        parts_in = get(content, "parts") or []
        if role == "model":
            parts: list[ContentPart] = []
            for j, part in enumerate(parts_in):
                parts.extend(parse_model_part(part, f"{where}.parts[{j}]"))
            calls.model_turn(parts)
            messages.append(Message("assistant", parts))
            continue
        results: list[ContentPart] = []
        visible: list[ContentPart] = []
        for j, part in enumerate(parts_in):
            pwhere = f"{where}.parts[{j}]"
            response = get(part, "functionResponse")
            if isinstance(response, dict):
                name = str(get(response, "name") or "")
                call_id = calls.answer(name, get(response, "id"), pwhere)
                results.append(ToolResultPart(tool_call_id=call_id, content=_function_result(response, pwhere)))
                continue
            found = parse_visible_part(part, pwhere)
            if found is not None:
                visible.append(found)
        # canonical tool results live in role "tool" messages, before the user's own words
        if results:
            messages.append(Message("tool", results))
        if visible or not results:
            messages.append(Message("user", visible))
    return messages


def _parse_tools(body: dict[str, Any]) -> list[Tool]:
    tools: list[Tool] = []
    for i, tool in enumerate(get(body, "tools") or []):
        other = [k for k, v in tool.items() if v is not None and k not in ("functionDeclarations",
                                                                            "function_declarations")]
        if other:
            raise bad_request(f"tools[{i}]: {other[0]} is a Gemini tool no other channel has (function "
                              "declarations only)", param=f"tools[{i}].{other[0]}")
        for j, decl in enumerate(get(tool, "functionDeclarations") or []):
            schema = get(decl, "parametersJsonSchema")
            if schema is None and get(decl, "parameters") is not None:
                schema = to_json_schema(get(decl, "parameters"), f"tools[{i}].functionDeclarations[{j}].parameters")
            tools.append(Tool(name=str(get(decl, "name")), description=get(decl, "description"),
                              parameters=schema if isinstance(schema, dict) else None))
    return tools


def parse_request(body: dict[str, Any], model: str, stream: bool) -> ChatRequest:
    """A Gemini request body in the canonical model (only for conversions: a Gemini client
    on a Gemini channel is passed through untouched)."""
    if get(body, "cachedContent") is not None:
        raise bad_request("cachedContent names a Gemini cache no other channel can read", param="cachedContent")
    messages: list[Message] = []
    system = _parse_system(get(body, "systemInstruction"))
    if system is not None:
        messages.append(system)
    messages.extend(parse_turns(get(body, "contents") or []))
    request = ChatRequest(model=model, messages=messages, stream=stream, tools=_parse_tools(body),
                          tool_choice=gen_config.parse_tool_choice(body), include_usage=True)
    generation = get(body, "generationConfig")
    if isinstance(generation, dict):
        gen_config.parse_generation_config(generation, request)
    return request


# ---- canonical → Gemini ------------------------------------------------------------------


def _render_result(part: ToolResultPart, names: Mapping[str, str], where: str) -> dict[str, Any]:
    name = names.get(part.tool_call_id)
    if name is None:
        raise bad_request(f"{where}: the tool result for {part.tool_call_id!r} answers no tool call of an "
                          "assistant message before it", param=where)
    text = "".join(p.text for p in part.content if isinstance(p, TextPart))
    response: dict[str, Any] = {"name": name, "response": response_object(text)}
    if part.is_error and "error" not in response["response"]:
        response["response"] = {"error": text}
    if part.tool_call_id:
        response["id"] = part.tool_call_id
    images = [render_image(p) for p in part.content if isinstance(p, ImagePart)]
    if images:
        response["parts"] = images
    return {"functionResponse": response}


def _render_user(msg: Message, names: Mapping[str, str], where: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in msg.content:
        if isinstance(p, ToolResultPart):
            out.append(_render_result(p, names, where))
        elif isinstance(p, TextPart) and p.text:  # Gemini refuses empty text parts
            out.append({"text": p.text})
        elif isinstance(p, ImagePart):
            out.append(render_image(p))
    return out


def render_request(req: ChatRequest, model: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical request as a ``GenerateContentRequest`` body (the model goes in the URL)."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id → function name, for the responses that follow
    sign_calls = gen_config.takes_thinking_level(model)

    def append(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role:  # tool results + the user's next words: one turn
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    for i, msg in enumerate(req.messages):
        if msg.role in ("system", "developer"):
            system.extend({"text": p.text} for p in msg.content if isinstance(p, TextPart) and p.text)
        elif msg.role == "assistant":
            names.update((p.id, p.name) for p in msg.content if isinstance(p, ToolCallPart))
            append("model", render_model_parts(msg.content, sign_calls=sign_calls))
        else:
            append("user", _render_user(msg, names, f"messages[{i}]"))
    if not contents:
        raise bad_request("messages: at least one user or assistant message is required (system messages alone "
                          "cannot be sent to this channel)", param="messages")
    out: dict[str, Any] = {"contents": contents}
    if system:
        out["systemInstruction"] = {"parts": system}
    if req.tools:
        declarations = []
        for t in req.tools:
            decl: dict[str, Any] = {"name": t.name}
            if t.description:
                decl["description"] = t.description
            if t.parameters:
                decl["parametersJsonSchema"] = {"type": "object", **t.parameters}
            declarations.append(decl)
        out["tools"] = [{"functionDeclarations": declarations}]
        tool_config = gen_config.render_tool_config(req.tool_choice)
        if tool_config is not None:
            out["toolConfig"] = tool_config
    generation = gen_config.render_generation_config(req, model)
    if generation:
        out["generationConfig"] = generation
    safety = gen_config.render_safety(settings)
    if safety:
        out["safetySettings"] = safety
    return out
