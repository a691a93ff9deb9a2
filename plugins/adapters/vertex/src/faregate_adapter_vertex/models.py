"""Which publisher serves a model, and Claude's names on Vertex. A client names Claude as
Anthropic does (``claude-sonnet-4-5``, ``claude-3-5-haiku-20241022``); Vertex names its
versions ``claude-sonnet-4-5@20250929``: a dated name gets its date after an ``@``, an alias
the date of its model. Any other name (a Vertex name already, a Gemini model) is called as
it is."""

from __future__ import annotations

import re

from faregate_adapter_vertex.names import ANTHROPIC, GOOGLE

_DATED = re.compile(r"(claude-[a-z0-9.-]+?)-(\d{8})")
#: Vertex's names that are not the rule's
_EXCEPTIONS = {"claude-3-5-sonnet-20241022": "claude-3-5-sonnet-v2@20241022"}
#: Anthropic's aliases (the Anthropic plugin's catalog names) and the dated model of each
_ALIASES = {
    "claude-3-5-haiku-latest": "claude-3-5-haiku-20241022", "claude-3-7-sonnet-latest": "claude-3-7-sonnet-20250219",
    "claude-sonnet-4-0": "claude-sonnet-4-20250514", "claude-opus-4-0": "claude-opus-4-20250514",
    "claude-opus-4-1": "claude-opus-4-1-20250805", "claude-sonnet-4-5": "claude-sonnet-4-5-20250929",
    "claude-haiku-4-5": "claude-haiku-4-5-20251001", "claude-opus-4-5": "claude-opus-4-5-20251101",
}
#: the names the console offers for a Vertex channel (Gemini's come from the Gemini plugin)
CLAUDE_CATALOG = tuple(_ALIASES)


def publisher(model: str) -> str:
    return ANTHROPIC if model.startswith("claude") else GOOGLE


def vertex_model(model: str) -> str:
    """The name to call ``model`` by."""
    dated = _ALIASES.get(model, model)
    if dated in _EXCEPTIONS:
        return _EXCEPTIONS[dated]
    found = _DATED.fullmatch(dated)
    return f"{found[1]}@{found[2]}" if found else model
