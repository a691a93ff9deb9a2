"""Reasoning and structured-output settings of a Messages request ⇄ the canonical
:class:`Reasoning` and ``response_format``: ``thinking``, ``output_config.effort`` and
``output_config.format``. Pure functions; no I/O.

Budget rules (OpenAI → Anthropic): a client's ``max_completion_tokens`` is an upper bound
that *includes* reasoning tokens, so the thinking budget must fit inside it, never be
added to it. Anthropic wants ``1024 <= budget_tokens < max_tokens``: a budget that does
not fit is shrunk to half the client's bound (at least 1024), and when even 1024 does not
fit (``max_tokens <= 1024``) thinking is turned off. A relayed request always has a bound
that was reserved (the client's, else the gateway's for the model), so it fits the same way.
Only without one (a channel test, a price that does not depend on output), when the default
is too small for the budget, is ``max_tokens`` raised: that default is nobody's promise.
"""

from __future__ import annotations

import logging
from typing import Any

from faregate.api import ChatRequest, Reasoning, bad_request

log = logging.getLogger("faregate.adapter.anthropic")

MIN_THINKING_BUDGET = 1024  # Anthropic rejects smaller budgets
# reasoning_effort → thinking budget; chosen so the OpenAI adapter's budget → effort
# mapping (<4096 low, <16384 medium, else high) gives the same effort back
EFFORT_BUDGET = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576, "xhigh": 32768, "max": 32768}
# efforts that mean "no reasoning at all" (OpenAI's ``reasoning_effort: "none"``)
NO_REASONING = {"none"}
# output_config.effort → the canonical (OpenAI) effort; Anthropic's "max" is above
# OpenAI's highest level, so it maps onto that
EFFORT_FROM_ANTHROPIC = {"low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "xhigh"}
# Anthropic's documented default effort, for adaptive thinking without one
DEFAULT_ADAPTIVE_EFFORT = "high"
# the name OpenAI's json_schema response_format requires; Anthropic's format has none
SCHEMA_NAME = "structured_output"


# ---- Anthropic → canonical --------------------------------------------------------------


def parse_reasoning(body: dict[str, Any]) -> Reasoning | None:
    """``thinking`` and ``output_config.effort`` as one canonical :class:`Reasoning`."""
    thinking = body.get("thinking")
    config = body.get("output_config")
    effort_in = config.get("effort") if isinstance(config, dict) else None
    effort: str | None = None
    if effort_in is not None:
        effort = EFFORT_FROM_ANTHROPIC.get(str(effort_in))
        if effort is None:
            raise bad_request(f"output_config.effort {effort_in!r} is not supported on this channel",
                              param="output_config.effort")
    if not isinstance(thinking, dict):
        return Reasoning(effort=effort) if effort else None
    kind = thinking.get("type")
    if kind == "disabled":
        return Reasoning(enabled=False)
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        return Reasoning(effort=effort, budget_tokens=budget if isinstance(budget, int) else None)
    if kind == "adaptive":
        # the model decides how much to think; the effort (Anthropic's default: high) is the
        # only lever another vendor has
        return Reasoning(effort=effort or DEFAULT_ADAPTIVE_EFFORT)
    raise bad_request(f"thinking.type {kind!r} is invalid", param="thinking.type")


def parse_response_format(body: dict[str, Any]) -> dict[str, Any] | None:
    """``output_config.format`` (structured output) as an OpenAI-style ``response_format``."""
    config = body.get("output_config")
    fmt = config.get("format") if isinstance(config, dict) else None
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict):
        raise bad_request("output_config.format: only {type: json_schema, schema: {...}} can be converted",
                          param="output_config.format")
    # strict: Anthropic's structured output guarantees the schema, as OpenAI's strict mode does
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": fmt["schema"], "strict": True}}


# ---- canonical → Anthropic --------------------------------------------------------------


def effort_budget(reasoning: Reasoning) -> int:
    if reasoning.budget_tokens is not None:
        return max(MIN_THINKING_BUDGET, reasoning.budget_tokens)
    return EFFORT_BUDGET.get(reasoning.effort or "medium", EFFORT_BUDGET["medium"])


def wants_thinking(reasoning: Reasoning | None) -> bool:
    return reasoning is not None and reasoning.enabled and reasoning.effort not in NO_REASONING


def fit_budget(budget: int, max_tokens: int, client_bound: bool) -> tuple[int | None, int]:
    """``(budget_tokens or None for no thinking, max_tokens)``: see the module docstring."""
    if budget < max_tokens:
        return budget, max_tokens
    if not client_bound:
        return budget, max_tokens + budget
    if max_tokens <= MIN_THINKING_BUDGET:
        return None, max_tokens
    return max(MIN_THINKING_BUDGET, max_tokens // 2), max_tokens


def render_output_format(req: ChatRequest) -> dict[str, Any] | None:
    """An OpenAI-style ``json_schema`` ``response_format`` as ``output_config.format``;
    None otherwise. ``json_object`` (any JSON, no schema) has no Anthropic form; it was
    always sent without it (the prompt usually asks for JSON too), so it stays a
    logged omission rather than a new 400 for working clients."""
    fmt = req.response_format
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return None
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if fmt.get("type") == "json_schema" and isinstance(schema, dict):
        return {"type": "json_schema", "schema": schema}
    if fmt.get("type") == "json_schema":
        raise bad_request("response_format.json_schema.schema is required for this channel",
                          param="response_format")
    log.warning("response_format %r has no Anthropic form; sent without it", fmt.get("type"))
    return None
