"""Every field of a ``generateContent`` (or ``countTokens`` / ``embedContent``) body the
gateway reads, checked against its declared type and range before anything else sees it:
a wrong one is a 400 naming the field (in Gemini's error shape), never forwarded, never a
500. The same walk estimates the prompt's tokens. Fields the gateway does not read are
left to the upstream, which knows its own (newer) API."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from faregate.api import MAX_OUTPUT_TOKENS, NumberBound, bad_request, estimator
from faregate_adapter_gemini.fields import get

INT32_MAX = 2**31 - 1
#: the roles a turn may have ("function" is what older clients give function responses)
ROLES = frozenset({"user", "model", "function"})
#: the fields of a part of which exactly one is set (the proto's ``data`` oneof)
DATA_FIELDS = ("text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode",
               "codeExecutionResult", "toolCall", "toolResponse")
#: Gemini's limits: up to 5 stop sequences, up to 8 candidates
MAX_STOP_SEQUENCES = 5
MAX_CANDIDATES = 8
MAX_NAME = 128
MODES = frozenset({"MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"})
THINKING_LEVELS = frozenset({"THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH"})
#: generationConfig's numbers and their ranges (the API reference)
NUMBERS = {
    "temperature": NumberBound(0, 2),
    "topP": NumberBound(0, 1),
    "topK": NumberBound(1, INT32_MAX, integer=True),
    "maxOutputTokens": NumberBound(1, MAX_OUTPUT_TOKENS, integer=True),
    "candidateCount": NumberBound(1, MAX_CANDIDATES, integer=True),
    "seed": NumberBound(-(2**31), INT32_MAX, integer=True),
    "presencePenalty": NumberBound(-2, 2),
    "frequencyPenalty": NumberBound(-2, 2),
    "logprobs": NumberBound(0, 20, integer=True),
}
THINKING_NUMBERS = {"thinkingBudget": NumberBound(-1, MAX_OUTPUT_TOKENS, integer=True)}
_KINDS = {str: "a string", list: "an array", dict: "an object", bool: "a boolean"}


@dataclass(slots=True)
class Facts:
    """What the walk learnt: the prompt estimate, the output bound, the candidates, and
    whether the client wants to see thoughts."""

    prompt_tokens: int = 0
    max_tokens: int | None = None
    candidates: int = 1
    include_thoughts: bool = False


def typed(obj: dict[str, Any], name: str, kind: type, where: str) -> Any:
    """``obj``'s field ``name`` if it is of ``kind`` (or absent: None); 400 otherwise."""
    value = get(obj, name)
    if value is None or isinstance(value, kind):
        return value
    raise bad_request(f"{where}{name} must be {_KINDS[kind]}", param=f"{where}{name}")


def as_number(value: Any, integer: bool) -> int | float | None:
    """A number as Google's proto3 JSON parser reads one: a JSON number or a decimal
    string, for an integer field also an integral float (the Python SDK sends ``topK`` as
    ``5.0``); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = int(value) if integer else float(value)
        except ValueError:
            return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        if not integer:
            return value
        return int(value) if value.is_integer() else None
    return None


def number(obj: dict[str, Any], name: str, integer: bool = True) -> Any:
    """A checked numeric field, normalised (an integral ``5.0`` is ``5``); None when absent."""
    value = get(obj, name)
    return None if value is None else as_number(value, integer)


def bounded(obj: dict[str, Any], bounds: dict[str, NumberBound], where: str) -> None:
    """400 naming the first field of ``bounds`` in ``obj`` that is not a number in its range."""
    for name, bound in bounds.items():
        value = get(obj, name)
        if value is None:
            continue
        found = as_number(value, bound.integer)
        if found is None or not bound.lo <= found <= bound.hi:
            kind = "an integer" if bound.integer else "a number"
            raise bad_request(f"{where}{name} must be {kind} from {bound.lo:g} to {bound.hi:g}",
                              param=f"{where}{name}")


def _string(value: Any, where: str, limit: int | None = None) -> str:
    if not isinstance(value, str) or not value or (limit is not None and len(value) > limit):
        size = f" of at most {limit} characters" if limit else ""
        raise bad_request(f"{where} must be a non-empty string{size}", param=where)
    return value


def check_part(part: Any, where: str) -> int:
    """One part; its token estimate."""
    if not isinstance(part, dict):
        raise bad_request(f"{where} must be an object", param=where)
    present = [name for name in DATA_FIELDS if get(part, name) is not None]
    if len(present) != 1:
        raise bad_request(f"{where} must set exactly one of {', '.join(DATA_FIELDS)}", param=where)
    kind = present[0]
    typed(part, "thought", bool, f"{where}.")
    typed(part, "thoughtSignature", str, f"{where}.")
    if kind == "text":
        return estimator.text(typed(part, "text", str, f"{where}."))
    value = typed(part, kind, dict, f"{where}.")
    if kind == "inlineData":
        _string(get(value, "mimeType"), f"{where}.inlineData.mimeType")
        typed(value, "data", str, f"{where}.inlineData.")
        if get(value, "data") is None:
            raise bad_request(f"{where}.inlineData.data is required", param=f"{where}.inlineData.data")
        return estimator.IMAGE_TOKENS
    if kind == "fileData":
        _string(get(value, "fileUri"), f"{where}.fileData.fileUri")
        typed(value, "mimeType", str, f"{where}.fileData.")
        return estimator.IMAGE_TOKENS
    if kind in ("functionCall", "functionResponse"):
        _string(get(value, "name"), f"{where}.{kind}.name", MAX_NAME)
        typed(value, "id", str, f"{where}.{kind}.")
        payload = typed(value, "args" if kind == "functionCall" else "response", dict, f"{where}.{kind}.")
        return estimator.text(str(get(value, "name"))) + estimator.json(payload or {})
    return estimator.json(value)


def check_content(content: Any, where: str, *, system: bool = False) -> int:
    """One ``Content`` (a turn, or the system instruction); its token estimate."""
    if not isinstance(content, dict):
        raise bad_request(f"{where} must be an object", param=where)
    role = typed(content, "role", str, f"{where}.")
    if role is not None and not system and role not in ROLES:
        raise bad_request(f"{where}.role must be 'user' or 'model'", param=f"{where}.role")
    parts = get(content, "parts")
    if not isinstance(parts, list) or not parts:
        raise bad_request(f"{where}.parts must be a non-empty array", param=f"{where}.parts")
    return estimator.MESSAGE_OVERHEAD + sum(check_part(p, f"{where}.parts[{i}]") for i, p in enumerate(parts))


def check_contents(contents: Any, where: str = "contents") -> int:
    if not isinstance(contents, list) or not contents:
        raise bad_request(f"{where} must be a non-empty array", param=where)
    return sum(check_content(c, f"{where}[{i}]") for i, c in enumerate(contents))


def _check_tools(tools: list[Any]) -> int:
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise bad_request(f"{where} must be an object", param=where)
        declarations = typed(tool, "functionDeclarations", list, f"{where}.") or []
        for j, decl in enumerate(declarations):
            dwhere = f"{where}.functionDeclarations[{j}]"
            if not isinstance(decl, dict):
                raise bad_request(f"{dwhere} must be an object", param=dwhere)
            _string(get(decl, "name"), f"{dwhere}.name", MAX_NAME)
            typed(decl, "description", str, f"{dwhere}.")
            typed(decl, "parameters", dict, f"{dwhere}.")
    return estimator.tools(tools)


def _check_tool_config(config: dict[str, Any]) -> None:
    calling = typed(config, "functionCallingConfig", dict, "toolConfig.")
    if calling is None:
        return
    mode = typed(calling, "mode", str, "toolConfig.functionCallingConfig.")
    if mode is not None and mode not in MODES:
        raise bad_request(f"toolConfig.functionCallingConfig.mode must be one of {', '.join(sorted(MODES))}",
                          param="toolConfig.functionCallingConfig.mode")
    names = typed(calling, "allowedFunctionNames", list, "toolConfig.functionCallingConfig.") or []
    for i, name in enumerate(names):
        _string(name, f"toolConfig.functionCallingConfig.allowedFunctionNames[{i}]", MAX_NAME)


def _check_generation_config(config: dict[str, Any], facts: Facts) -> None:
    where = "generationConfig."
    bounded(config, NUMBERS, where)
    stops = typed(config, "stopSequences", list, where)
    if stops is not None and (len(stops) > MAX_STOP_SEQUENCES or not all(isinstance(s, str) for s in stops)):
        raise bad_request(f"generationConfig.stopSequences must be at most {MAX_STOP_SEQUENCES} strings",
                          param="generationConfig.stopSequences")
    for name, kind in (("responseMimeType", str), ("responseSchema", dict), ("responseModalities", list),
                       ("responseLogprobs", bool), ("speechConfig", dict), ("imageConfig", dict)):
        typed(config, name, kind, where)
    thinking = typed(config, "thinkingConfig", dict, where)
    if thinking is not None:
        bounded(thinking, THINKING_NUMBERS, f"{where}thinkingConfig.")
        facts.include_thoughts = typed(thinking, "includeThoughts", bool, f"{where}thinkingConfig.") is True
        level = typed(thinking, "thinkingLevel", str, f"{where}thinkingConfig.")
        if level is not None and level not in THINKING_LEVELS:
            raise bad_request(f"generationConfig.thinkingConfig.thinkingLevel must be one of "
                              f"{', '.join(sorted(THINKING_LEVELS))}", param="generationConfig.thinkingConfig"
                                                                             ".thinkingLevel")
    facts.candidates = number(config, "candidateCount") or 1
    limit = number(config, "maxOutputTokens")
    if limit is not None:
        facts.max_tokens = min(MAX_OUTPUT_TOKENS, limit * facts.candidates)


def check_generate(body: dict[str, Any], *, contents_required: bool = True) -> Facts:
    """A ``GenerateContentRequest`` body: its facts, or a 400 naming the first bad field."""
    facts = Facts()
    contents = get(body, "contents")
    tokens = check_contents(contents) if contents is not None or contents_required else 0
    system = get(body, "systemInstruction")
    if system is not None:
        tokens += check_content(system, "systemInstruction", system=True)
    tools = typed(body, "tools", list, "")
    if tools:
        tokens += _check_tools(tools)
    tool_config = typed(body, "toolConfig", dict, "")
    if tool_config is not None:
        _check_tool_config(tool_config)
    settings = typed(body, "safetySettings", list, "") or []
    for i, setting in enumerate(settings):
        if not isinstance(setting, dict):
            raise bad_request(f"safetySettings[{i}] must be an object", param=f"safetySettings[{i}]")
        _string(get(setting, "category"), f"safetySettings[{i}].category")
        _string(get(setting, "threshold"), f"safetySettings[{i}].threshold")
    typed(body, "cachedContent", str, "")
    config = typed(body, "generationConfig", dict, "")
    if config is not None:
        _check_generation_config(config, facts)
    facts.prompt_tokens = max(1, tokens)
    return facts
