"""A Responses request body → the canonical :class:`ChatRequest`, for channels that do not
serve the Responses API (converted through their chat endpoint). Pure functions.

``instructions`` becomes a ``system`` message (vendors that know no ``developer`` role take
it); consecutive assistant-side items (reasoning, an assistant message, function calls)
become one assistant turn, as the chat formats carry them; a ``function_call_output`` is a
tool result. Reasoning items carry what a round trip needs: their summary text, and the
vendor's signature or encrypted block in ``encrypted_content`` (a signed thinking block has
text, a redacted one has none). What only OpenAI's own Responses API can honour
(``previous_response_id``, ``conversation``, stored prompts, built-in tools, files, item
references) is a 400 naming the field; the summary routes such requests to native channels,
so this is the last line. Responses-only options with no chat meaning (``store``,
``include``, ``truncation``, ``metadata`` …) are not sent; a Response object echoes them.
"""

from __future__ import annotations

import re
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
)
from faregate_adapter_openai.responses_api.summary import STATEFUL, TOOL_CHOICE_MODES

DATA_URL = re.compile(r"^data:(?P<mt>[\w.+/-]+);base64,(?P<data>.*)$", re.S)
#: the schema name a Chat Completions ``json_schema`` needs when the client gave none
DEFAULT_SCHEMA_NAME = "response"


def _native_only(field: str) -> Exception:
    return bad_request(f"{field}: this model's channel does not serve OpenAI's Responses API, and the gateway "
                       "keeps no responses, conversations or stored prompts and runs no built-in tools; "
                       "send the whole conversation as input, with function tools only", param=field)


def _image(part: dict[str, Any], where: str) -> ImagePart:
    url = part.get("image_url")
    if not isinstance(url, str):  # a file_id: OpenAI's file store
        raise _native_only(f"{where}.image_url")
    detail = part.get("detail")
    detail = detail if detail in ("low", "high") else None  # "auto", "original": the vendor's default
    match = DATA_URL.match(url)
    if match:
        return ImagePart(data=match["data"], media_type=match["mt"], detail=detail)
    return ImagePart(url=url, detail=detail)


def _parts(content: Any, where: str) -> list[TextPart | ImagePart]:
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if not isinstance(content, list):
        raise bad_request(f"{where} must be a string or an array", param=where)
    parts: list[TextPart | ImagePart] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text") and isinstance(part.get("text"), str):
            parts.append(TextPart(part["text"]))
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            parts.append(TextPart(part["refusal"]))
        elif kind == "input_image":
            parts.append(_image(part, f"{where}[{j}]"))
        else:
            raise _native_only(f"{where}[{j}]")
    return parts


def reasoning_part(item: dict[str, Any]) -> ReasoningPart:
    """A reasoning item: summary text plus what ``encrypted_content`` carries (the
    signature of that text, or a whole encrypted block when there is no text)."""
    texts = [s.get("text") for s in item.get("summary") or () if isinstance(s, dict)]
    texts += [c.get("text") for c in item.get("content") or () if isinstance(c, dict)]
    text = "".join(t for t in texts if isinstance(t, str))
    encrypted = item.get("encrypted_content")
    encrypted = encrypted if isinstance(encrypted, str) and encrypted else None
    if text:
        return ReasoningPart(text=text, signature=encrypted)
    return ReasoningPart(redacted=encrypted)


def parse_input(value: Any) -> list[Message]:
    if isinstance(value, str):
        return [Message("user", [TextPart(value)])]
    messages: list[Message] = []

    def assistant() -> Message:
        if not messages or messages[-1].role != "assistant":
            messages.append(Message("assistant", []))
        return messages[-1]

    for i, item in enumerate(value or ()):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise bad_request(f"{where} must be an object", param=where)
        kind = item.get("type")
        if kind in (None, "message") and "role" in item:
            role = item["role"]
            parts = _parts(item.get("content"), f"{where}.content")
            if role == "assistant":
                assistant().content.extend(parts)
            elif role in ("user", "system", "developer"):
                content: list[ContentPart] = [*parts]
                messages.append(Message(role, content))
            else:
                raise bad_request(f"{where}.role is invalid", param=f"{where}.role")
        elif kind == "function_call":
            assistant().content.append(ToolCallPart(id=str(item.get("call_id", "")), name=str(item.get("name", "")),
                                                    arguments=str(item.get("arguments", ""))))
        elif kind == "function_call_output":
            if not isinstance(item.get("call_id"), str):
                raise _native_only(f"{where}.call_id")
            output = item.get("output")
            result: list[TextPart | ImagePart] = (_parts(output, f"{where}.output") if isinstance(output, list)
                                                  else [TextPart(str(output or ""))])
            messages.append(Message("tool", [ToolResultPart(tool_call_id=str(item.get("call_id", "")),
                                                            content=result)]))
        elif kind == "reasoning":
            part = reasoning_part(item)
            if part.text or part.redacted:
                assistant().content.append(part)
        else:
            raise _native_only(where)
    return messages


def _tools(tools: Any) -> list[Tool]:
    out = []
    for i, tool in enumerate(tools or ()):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise _native_only(f"tools[{i}]")
        out.append(Tool(name=str(tool.get("name", "")), description=tool.get("description"),
                        parameters=tool.get("parameters"), strict=tool.get("strict")))
    return out


def _tool_choice(choice: Any, parallel: Any) -> ToolChoice | None:
    tool_choice = None
    if isinstance(choice, str) and choice in TOOL_CHOICE_MODES:
        mode: Literal["auto", "none", "required"] = "none" if choice == "none" else (
            "required" if choice == "required" else "auto")
        tool_choice = ToolChoice(mode=mode)
    elif isinstance(choice, dict):
        if choice.get("type") != "function":
            raise _native_only("tool_choice")
        tool_choice = ToolChoice(mode="tool", name=str(choice.get("name", "")))
    if isinstance(parallel, bool):
        tool_choice = tool_choice or ToolChoice()
        tool_choice.parallel = parallel
    return tool_choice


def response_format(text: Any) -> dict[str, Any] | None:
    """``text.format`` as the canonical (Chat Completions) ``response_format``."""
    fmt = text.get("format") if isinstance(text, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return None
    if fmt["type"] == "json_object":
        return {"type": "json_object"}
    spec: dict[str, Any] = {"name": fmt.get("name") or DEFAULT_SCHEMA_NAME, "schema": fmt.get("schema") or {}}
    for key in ("description", "strict"):
        if fmt.get(key) is not None:
            spec[key] = fmt[key]
    return {"type": "json_schema", "json_schema": spec}


def _reasoning(reasoning: Any) -> Reasoning | None:
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
    if not isinstance(effort, str):
        return None
    # "none" is OpenAI's "no reasoning": disabled, the level kept for a round trip
    return Reasoning(enabled=effort != "none", effort=effort)


def parse_request(body: dict[str, Any], model: str) -> ChatRequest:
    """The canonical request of a Responses body (checked by :func:`.summary.summarize`)."""
    for name in STATEFUL:
        if body.get(name) is not None:
            raise _native_only(name)
    if body.get("background"):
        raise _native_only("background")
    messages: list[Message] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append(Message("system", [TextPart(instructions)]))
    messages.extend(parse_input(body.get("input")))
    user = body.get("safety_identifier") or body.get("user")
    return ChatRequest(
        model=model,
        messages=messages,
        stream=bool(body.get("stream")),
        max_tokens=body.get("max_output_tokens"),
        temperature=body.get("temperature"),
        top_p=body.get("top_p"),
        tools=_tools(body.get("tools")),
        tool_choice=_tool_choice(body.get("tool_choice"), body.get("parallel_tool_calls")),
        reasoning=_reasoning(body.get("reasoning")),
        response_format=response_format(body.get("text")),
        user=user if isinstance(user, str) else None,
        include_usage=True,
    )

