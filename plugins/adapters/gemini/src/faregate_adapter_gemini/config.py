"""``generationConfig`` (sampling, output bound, stop sequences, structured output,
thinking), ``toolConfig`` and ``safetySettings`` ⇄ the canonical request's fields. Pure
functions; the fields were type-checked by :mod:`faregate_adapter_gemini.validate`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from faregate.api import ChatRequest, Reasoning, ToolChoice, bad_request
from faregate_adapter_gemini.fields import get
from faregate_adapter_gemini.schema_map import to_json_schema
from faregate_adapter_gemini.validate import MAX_CANDIDATES, MAX_STOP_SEQUENCES, number

JSON_MIME = "application/json"
#: the name OpenAI's json_schema response_format requires; Gemini's has none
SCHEMA_NAME = "response"
#: reasoning effort → thinking budget for models that take a budget (Gemini 2.5); the
#: OpenAI adapter's budget → effort mapping (<4096 low, <16384 medium) gives the effort back
EFFORT_BUDGET = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576, "xhigh": 32768, "max": 32768}
#: reasoning effort → ``thinkingLevel`` for models that take a level (Gemini 3)
EFFORT_LEVEL = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH", "xhigh": "HIGH", "max": "HIGH"}
LEVEL_EFFORT = {"MINIMAL": "minimal", "LOW": "low", "MEDIUM": "medium", "HIGH": "high"}
#: the harm categories a channel's safety threshold is applied to (the current, non-deprecated ones)
HARM_CATEGORIES = ("HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_SEXUALLY_EXPLICIT",
                   "HARM_CATEGORY_DANGEROUS_CONTENT")
#: new-api's ``GEMINI_SAFETY_SETTING`` default, for requests converted from other formats
DEFAULT_SAFETY_THRESHOLD = "BLOCK_NONE"
SAFETY_THRESHOLDS = frozenset({"HARM_BLOCK_THRESHOLD_UNSPECIFIED", "BLOCK_LOW_AND_ABOVE", "BLOCK_MEDIUM_AND_ABOVE",
                               "BLOCK_ONLY_HIGH", "BLOCK_NONE", "OFF"})
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def takes_thinking_level(model: str) -> bool:
    """Gemini 3 and later take ``thinkingLevel``; Gemini 2.5 a ``thinkingBudget``."""
    name = model.removeprefix("models/")
    return name.startswith("gemini-") and name[7:8].isdigit() and int(name[7:8]) >= 3


# ---- Gemini → canonical ------------------------------------------------------------------


def parse_response_format(config: dict[str, Any]) -> dict[str, Any] | None:
    mime = get(config, "responseMimeType")
    schema = get(config, "responseJsonSchema")
    if schema is None and get(config, "responseSchema") is not None:
        schema = to_json_schema(get(config, "responseSchema"), "generationConfig.responseSchema")
    if mime in (None, "", "text/plain") and schema is None:
        return None
    if mime != JSON_MIME:
        raise bad_request(f"generationConfig.responseMimeType {mime!r} with a schema is not supported by this "
                          "conversion (application/json only)", param="generationConfig.responseMimeType")
    if schema is None:
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema}}


def parse_reasoning(config: dict[str, Any]) -> Reasoning | None:
    thinking = get(config, "thinkingConfig")
    if not isinstance(thinking, dict):
        return None
    budget = number(thinking, "thinkingBudget")
    level = LEVEL_EFFORT.get(str(get(thinking, "thinkingLevel")))
    if budget == 0:
        return Reasoning(enabled=False)
    # -1 is Gemini's "dynamic": on, the model decides how much
    return Reasoning(effort=level, budget_tokens=budget if isinstance(budget, int) and budget > 0 else None)


def parse_generation_config(config: dict[str, Any], request: ChatRequest) -> None:
    """Fill ``request``'s sampling, bounds, output format and reasoning from ``config``."""
    modalities = get(config, "responseModalities")
    if isinstance(modalities, list) and any(m != "TEXT" for m in modalities):
        raise bad_request("generationConfig.responseModalities: only TEXT can be converted for this channel",
                          param="generationConfig.responseModalities")
    request.temperature = number(config, "temperature", integer=False)
    request.top_p = number(config, "topP", integer=False)
    request.top_k = number(config, "topK")
    request.max_tokens = number(config, "maxOutputTokens")
    request.stop = list(get(config, "stopSequences") or [])
    request.n = number(config, "candidateCount")
    request.seed = number(config, "seed")
    request.presence_penalty = number(config, "presencePenalty", integer=False)
    request.frequency_penalty = number(config, "frequencyPenalty", integer=False)
    request.response_format = parse_response_format(config)
    request.reasoning = parse_reasoning(config)


def parse_tool_choice(body: dict[str, Any]) -> ToolChoice | None:
    config = get(body, "toolConfig")
    calling = get(config, "functionCallingConfig") if isinstance(config, dict) else None
    if not isinstance(calling, dict):
        return None
    mode = get(calling, "mode") or "AUTO"
    names = get(calling, "allowedFunctionNames") or []
    if mode == "NONE":
        return ToolChoice(mode="none")
    if mode == "ANY":
        # one allowed function is a named choice; several cannot be said canonically (any of them)
        return ToolChoice(mode="tool", name=names[0]) if len(names) == 1 else ToolChoice(mode="required")
    return ToolChoice(mode="auto")  # AUTO, VALIDATED (auto with checked calls), unspecified


# ---- canonical → Gemini ------------------------------------------------------------------


def render_thinking(reasoning: Reasoning | None, model: str) -> dict[str, Any] | None:
    if reasoning is None:
        return None
    if not reasoning.enabled or reasoning.effort == "none":
        return {"thinkingBudget": 0}
    out: dict[str, Any] = {"includeThoughts": True}  # the client asked for reasoning: it sees it
    if reasoning.budget_tokens is not None:
        out["thinkingBudget"] = reasoning.budget_tokens
    elif reasoning.effort in EFFORT_BUDGET:
        if takes_thinking_level(model):
            out["thinkingLevel"] = EFFORT_LEVEL[reasoning.effort]
        else:
            out["thinkingBudget"] = EFFORT_BUDGET[reasoning.effort]
    return out


def render_response_format(fmt: dict[str, Any] | None, config: dict[str, Any]) -> None:
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return
    if fmt.get("type") == "json_object":
        config["responseMimeType"] = JSON_MIME
        return
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if fmt.get("type") != "json_schema" or not isinstance(schema, dict):
        raise bad_request("response_format: only json_object and json_schema with a schema can be sent to this "
                          "channel", param="response_format")
    config["responseMimeType"] = JSON_MIME
    config["responseJsonSchema"] = schema  # JSON Schema as it is: no lossy OpenAPI subset


def render_generation_config(req: ChatRequest, model: str) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for field, name in (("temperature", "temperature"), ("top_p", "topP"), ("top_k", "topK"),
                        ("max_tokens", "maxOutputTokens"), ("presence_penalty", "presencePenalty"),
                        ("frequency_penalty", "frequencyPenalty")):
        value = getattr(req, field)
        if value is not None:
            config[name] = value
    if req.stop:
        if len(req.stop) > MAX_STOP_SEQUENCES:
            raise bad_request(f"stop: this channel takes at most {MAX_STOP_SEQUENCES} stop sequences", param="stop")
        config["stopSequences"] = list(req.stop)
    if req.seed is not None:
        if not INT32_MIN <= req.seed <= INT32_MAX:
            raise bad_request("seed: this channel takes a 32-bit seed", param="seed")
        config["seed"] = req.seed
    if req.n is not None and req.n > 1:
        # the converted answer has one choice: more candidates would be paid for and dropped
        raise bad_request(f"n: this channel answers one choice per request here (Gemini allows up to "
                          f"{MAX_CANDIDATES} only in its own format)", param="n")
    render_response_format(req.response_format, config)
    thinking = render_thinking(req.reasoning, model)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    return config


def render_tool_config(choice: ToolChoice | None) -> dict[str, Any] | None:
    if choice is None:
        return None
    modes: dict[str, Literal["AUTO", "NONE", "ANY"]] = {"auto": "AUTO", "none": "NONE", "required": "ANY",
                                                       "tool": "ANY"}
    calling: dict[str, Any] = {"mode": modes[choice.mode]}
    if choice.mode == "tool" and choice.name:
        calling["allowedFunctionNames"] = [choice.name]
    return {"functionCallingConfig": calling}


def render_safety(settings: Mapping[str, Any]) -> list[dict[str, str]]:
    """The safety settings of a converted request: the channel setting ``safety_threshold``
    (``""`` sends none, Google's defaults apply) for every harm category, else new-api's
    default, BLOCK_NONE."""
    threshold = settings.get("safety_threshold", DEFAULT_SAFETY_THRESHOLD)
    if not isinstance(threshold, str) or threshold not in SAFETY_THRESHOLDS:
        return []  # empty or unknown: the channel's operator left it to Google
    return [{"category": category, "threshold": threshold} for category in HARM_CATEGORIES]
