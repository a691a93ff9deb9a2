"""Reading a Responses request (``POST /v1/responses``) before anything is converted: every
top-level field checked against its declared type and range (a 400 naming it otherwise),
the prompt estimated, and the one thing the relay must know beyond a chat summary: whether
the request needs OpenAI's own Responses API (server-side state, built-in tools, items
only OpenAI knows), which then goes to native channels only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from faregate.api import (
    MAX_OUTPUT_TOKENS,
    NumberBound,
    RequestSummary,
    bad_request,
    check_numbers,
    estimator,
)
from faregate_adapter_openai import media_tokens

#: the numeric fields and their ranges (OpenAI's API reference: ``max_output_tokens`` ≥ 16)
NUMBERS = {
    "max_output_tokens": NumberBound(16, MAX_OUTPUT_TOKENS, integer=True),
    "temperature": NumberBound(0, 2),
    "top_p": NumberBound(0, 1),
    "top_logprobs": NumberBound(0, 20, integer=True),
    "max_tool_calls": NumberBound(0, 2**31 - 1, integer=True),
}
#: the other top-level fields and the JSON types each may have (null is always allowed)
TYPES: dict[str, tuple[type, ...]] = {
    "input": (str, list), "instructions": (str,), "stream": (bool,), "store": (bool,), "background": (bool,),
    "parallel_tool_calls": (bool,), "previous_response_id": (str,), "conversation": (str, dict),
    "prompt": (dict,), "tools": (list,), "tool_choice": (str, dict), "reasoning": (dict,), "text": (dict,),
    "metadata": (dict,), "include": (list,), "stream_options": (dict,), "user": (str,),
    "safety_identifier": (str,), "prompt_cache_key": (str,), "prompt_cache_retention": (str,),
    "service_tier": (str,), "truncation": (str,), "context_management": (list,),
}
_TYPE_NAMES = {str: "a string", list: "an array", dict: "an object", bool: "a boolean"}
ENUMS: dict[str, frozenset[str]] = {
    "truncation": frozenset({"auto", "disabled"}),
    "service_tier": frozenset({"auto", "default", "flex", "scale", "priority", "fast", "ultrafast"}),
    "prompt_cache_retention": frozenset({"in_memory", "24h"}),
}
TOOL_CHOICE_MODES = frozenset({"auto", "none", "required"})
EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh", "max"})
SUMMARIES = frozenset({"auto", "concise", "detailed"})
VERBOSITY = frozenset({"low", "medium", "high"})
TEXT_FORMATS = frozenset({"text", "json_schema", "json_object"})
ROLES = frozenset({"user", "assistant", "system", "developer"})
#: content parts the canonical model holds; any other (files, audio) only OpenAI reads
CONVERTIBLE_PARTS = frozenset({"input_text", "output_text", "refusal", "input_image"})
#: input items the canonical model holds; any other (item references, built-in tool calls …)
#: only OpenAI knows
CONVERTIBLE_ITEMS = frozenset({"message", "function_call", "function_call_output", "reasoning"})
#: OpenAI's metadata limits: 16 pairs, keys up to 64 characters, values up to 512
METADATA_PAIRS, METADATA_KEY, METADATA_VALUE = 16, 64, 512
#: fields whose value says the request continues what OpenAI keeps for it
STATEFUL = ("previous_response_id", "conversation", "prompt")


@dataclass(slots=True)
class ResponsesSummary(RequestSummary):
    """A chat summary plus the request's parameters (a Response object echoes them) and
    ``native_only``: the field that needs OpenAI's own Responses API (None when any chat
    channel can answer it, converted)."""

    params: dict[str, Any] = field(default_factory=dict)
    native_only: str | None = None


def one_of(value: Any, allowed: frozenset[str]) -> bool:
    """``value`` is one of the ``allowed`` strings (never hashing what a client sent as a list)."""
    return isinstance(value, str) and value in allowed


def _type_error(name: str, types: tuple[type, ...]) -> Exception:
    expected = " or ".join(_TYPE_NAMES[t] for t in types)
    return bad_request(f"Invalid type for '{name}': expected {expected}.", code="invalid_type", param=name)


def _check_types(body: dict[str, Any]) -> None:
    for name, types in TYPES.items():
        value = body.get(name)
        if value is not None and not isinstance(value, types):
            raise _type_error(name, types)
    for name, allowed in ENUMS.items():
        value = body.get(name)
        if value is not None and not one_of(value, allowed):
            raise bad_request(f"Invalid value for '{name}': expected one of {', '.join(sorted(allowed))}.",
                              code="invalid_value", param=name)


def _check_metadata(metadata: dict[str, Any]) -> None:
    if len(metadata) > METADATA_PAIRS:
        raise bad_request(f"metadata may hold at most {METADATA_PAIRS} pairs", param="metadata")
    for key, value in metadata.items():
        if len(key) > METADATA_KEY or not isinstance(value, str) or len(value) > METADATA_VALUE:
            raise bad_request(f"metadata keys must be strings of at most {METADATA_KEY} characters and values "
                              f"strings of at most {METADATA_VALUE}", param="metadata")


def _check_reasoning(reasoning: dict[str, Any]) -> None:
    effort, summary = reasoning.get("effort"), reasoning.get("summary")
    if effort is not None and not one_of(effort, EFFORTS):
        raise bad_request(f"reasoning.effort must be one of {', '.join(sorted(EFFORTS))}", code="invalid_value",
                          param="reasoning.effort")
    if summary is not None and not one_of(summary, SUMMARIES):
        raise bad_request(f"reasoning.summary must be one of {', '.join(sorted(SUMMARIES))}", code="invalid_value",
                          param="reasoning.summary")


def check_text(text: dict[str, Any]) -> None:
    fmt, verbosity = text.get("format"), text.get("verbosity")
    if verbosity is not None and not one_of(verbosity, VERBOSITY):
        raise bad_request("text.verbosity must be low, medium or high", code="invalid_value", param="text.verbosity")
    if fmt is None:
        return
    if not isinstance(fmt, dict) or not one_of(fmt.get("type"), TEXT_FORMATS):
        raise bad_request("text.format must be an object of type text, json_schema or json_object",
                          param="text.format")
    if fmt["type"] == "json_schema" and not (isinstance(fmt.get("name"), str) and fmt["name"]
                                             and isinstance(fmt.get("schema"), dict)):
        raise bad_request("text.format of type json_schema needs a name and a schema object", param="text.format")


def _tools(tools: list[Any]) -> str | None:
    """Check the tool list; the field when a tool is a built-in one (only OpenAI runs those)."""
    needs: str | None = None
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise bad_request(f"tools[{i}] must be an object with a type", param=f"tools[{i}]")
        if tool["type"] != "function":
            needs = "tools"
            continue
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise bad_request(f"tools[{i}].name is required", param=f"tools[{i}].name")
        for key, types in (("parameters", (dict,)), ("strict", (bool,)), ("description", (str,))):
            if tool.get(key) is not None and not isinstance(tool[key], types):
                raise _type_error(f"tools[{i}].{key}", types)
    return needs


def _tool_choice(choice: Any) -> str | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        if choice not in TOOL_CHOICE_MODES:
            raise bad_request("tool_choice must be auto, none, required or an object", code="invalid_value",
                              param="tool_choice")
        return None
    kind = choice.get("type")
    if not isinstance(kind, str):
        raise bad_request("tool_choice.type is required", param="tool_choice")
    if kind == "function":
        if not isinstance(choice.get("name"), str) or not choice["name"]:
            raise bad_request("tool_choice.name is required for a function", param="tool_choice.name")
        return None
    return "tool_choice"  # a built-in tool, allowed_tools, mcp, custom: OpenAI's to run


def _text_tokens(value: Any) -> int:
    return estimator.text(value) if isinstance(value, str) else 0


def _content(content: Any, where: str, name: str = "content") -> tuple[int, bool]:
    """(estimated tokens, convertible) of a message's content (or a tool output's parts)."""
    where = f"{where}.{name}"
    if isinstance(content, str):
        return estimator.text(content), True
    if not isinstance(content, list):
        raise bad_request(f"{where} must be a string or an array", param=where)
    tokens, convertible = 0, True
    for j, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise bad_request(f"{where}[{j}] must be an object with a type", param=where)
        kind = part["type"]
        if kind in ("input_text", "output_text") and not isinstance(part.get("text"), str):
            raise bad_request(f"{where}[{j}].text must be a string", param=where)
        if kind == "input_image":
            url = part.get("image_url")
            if url is not None and not isinstance(url, str):
                raise bad_request(f"{where}[{j}].image_url must be a string", param=where)
            convertible = convertible and isinstance(url, str)  # a file_id is OpenAI's to resolve
            # chat's rule: tiles from a data URI's header (a URL or a file_id: the flat allowance)
            tokens += media_tokens.image_tokens({"url": url, "detail": part.get("detail")})
            continue
        if kind not in CONVERTIBLE_PARTS:
            convertible = False
            if kind == "input_audio":  # chat's rule: its duration, from the file's header
                tokens += media_tokens.audio_tokens(part.get("input_audio"))
            else:  # files (as in chat) and what else OpenAI reads: a flat allowance, the upstream bills the truth
                tokens += estimator.IMAGE_TOKENS
            continue
        tokens += _text_tokens(part.get("text")) + _text_tokens(part.get("refusal"))
    return tokens, convertible


def _item(item: Any, where: str) -> tuple[int, bool]:
    """(estimated tokens, convertible) of one input item; 400 on a malformed one."""
    if not isinstance(item, dict):
        raise bad_request(f"{where} must be an object", param=where)
    kind = item.get("type")
    if kind is not None and not isinstance(kind, str):
        raise bad_request(f"{where}.type must be a string", param=f"{where}.type")
    item_id = item.get("id", "")
    if not isinstance(item_id, str) and not (item_id is None and kind == "function_call_output"):  # OpenAI's types
        raise bad_request(f"{where}.id must be a string", param=f"{where}.id")
    if kind in (None, "message") and "role" in item:
        if not one_of(item["role"], ROLES):
            raise bad_request(f"{where}.role must be user, assistant, system or developer", param=f"{where}.role")
        tokens, convertible = _content(item.get("content"), where)
        return tokens + estimator.MESSAGE_OVERHEAD, convertible
    if kind == "function_call":
        for key in ("call_id", "name", "arguments"):
            if not isinstance(item.get(key), str):
                raise bad_request(f"{where}.{key} must be a string", param=f"{where}.{key}")
        return estimator.text(item["name"]) + estimator.text(item["arguments"]), True
    if kind == "function_call_output":
        output, call_id = item.get("output"), item.get("call_id")
        if not isinstance(output, str | list) or not isinstance(call_id, str | None):
            raise bad_request(f"{where} needs an output (a string or an array) and a string call_id", param=where)
        # no call_id (an output a program of OpenAI's called for): no chat tool result carries it
        answers_a_call = call_id is not None
        if isinstance(output, str):
            return estimator.text(output) + estimator.MESSAGE_OVERHEAD, answers_a_call
        tokens, convertible = _content(output, where, "output")
        return tokens + estimator.MESSAGE_OVERHEAD, convertible and answers_a_call
    if kind == "reasoning":
        if not isinstance(item.get("id"), str):
            raise bad_request(f"{where}.id is required for a reasoning item", param=f"{where}.id")
        summary = item.get("summary")
        if not isinstance(summary, list) or not all(isinstance(s, dict) and isinstance(s.get("text"), str)
                                                    for s in summary):
            raise bad_request(f"{where}.summary must be an array of summary_text parts", param=f"{where}.summary")
        encrypted = item.get("encrypted_content")
        if encrypted is not None and not isinstance(encrypted, str):
            raise bad_request(f"{where}.encrypted_content must be a string", param=f"{where}.encrypted_content")
        return sum(estimator.text(s["text"]) for s in summary), True
    if kind is None and not isinstance(item.get("id"), str):
        raise bad_request(f"{where} must be a message (role, content) or an item with a type", param=where)
    # an item reference or a built-in tool's item: OpenAI knows what it is
    return estimator.json(item), False


def read_input(value: Any) -> tuple[int, bool]:
    """Check ``input`` (a string or items): its estimated tokens, and whether the canonical
    model can carry all of it."""
    if isinstance(value, str):
        return estimator.text(value) + estimator.MESSAGE_OVERHEAD, True
    tokens, convertible = 0, True
    for i, item in enumerate(value):
        t, ok = _item(item, f"input[{i}]")
        tokens += t
        convertible = convertible and ok
    return tokens, convertible


def summarize(body: dict[str, Any]) -> ResponsesSummary:
    """Check a Responses request and say what it needs (see the module docstring)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required", param="model")
    _check_types(body)
    check_numbers(body, NUMBERS)
    native_only: str | None = next((name for name in STATEFUL if body.get(name) is not None), None)
    if body.get("background"):
        if not body.get("stream"):
            # it would finish after this request returns: never seen, so never billed
            raise bad_request("background responses are served only as streams (stream: true): the gateway "
                              "cannot bill or relay a response that finishes after the request", param="background")
        native_only = native_only or "background"
    value = body.get("input")
    if value is None and native_only is None:
        raise bad_request("input is required", code="missing_required_parameter", param="input")
    if not value and native_only is None:
        raise bad_request("input must not be empty", param="input")
    tokens, convertible = read_input(value) if value else (0, True)
    if not convertible:
        native_only = native_only or "input"
    tokens += _text_tokens(body.get("instructions"))
    tools = body.get("tools")
    if tools:
        tool_needs = _tools(tools)  # checked whatever else the request needs
        native_only = native_only or tool_needs
        tokens += estimator.tools(tools)
    choice_needs = _tool_choice(body.get("tool_choice"))
    native_only = native_only or choice_needs
    for name, check in (("metadata", _check_metadata), ("reasoning", _check_reasoning), ("text", check_text)):
        if body.get(name) is not None:
            check(body[name])
    return ResponsesSummary(model=model, stream=bool(body.get("stream")), max_tokens=body.get("max_output_tokens"),
                            include_usage=True, prompt_tokens=max(1, tokens), params=body, native_only=native_only,
                            sends_output_cap=True)
