"""new-api's price tables and its rules for finding a model in them.

The built-in tables are data (``default_prices.json`` beside this module, with its provenance):
each is the default of the option of its name, and a stored option replaces its whole table, as
new-api's does. A model is looked up by its *matching name* (new-api's FormatMatchingModelName:
every custom GPT ``gpt-4-gizmo-…`` is ``gpt-4-gizmo-*``, a Gemini 2.5 thinking-budget variant
``gemini-2.5-flash-thinking-128`` is ``gemini-2.5-flash-thinking-*``). A model without a
completion ratio of its own gets its family's (new-api's hard-coded GetCompletionRatio rules).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

from faregate import jsonutil

#: the options whose defaults are the built-in tables
TABLES = ("ModelRatio", "CompletionRatio", "ModelPrice", "CacheRatio", "CreateCacheRatio", "ImageRatio",
          "AudioRatio", "AudioCompletionRatio")

#: what a model without an entry of its own pays for cache writes (new-api's GetCreateCacheRatio)
DEFAULT_CREATE_CACHE_RATIO = 1.25


@cache
def _document() -> dict[str, Any]:
    loaded: dict[str, Any] = jsonutil.loads(files("faregate.billing").joinpath("default_prices.json").read_bytes())
    return loaded


def default_table(option: str) -> dict[str, float]:
    """A built-in table (a fresh copy): ``option`` is one of :data:`TABLES`."""
    table: dict[str, float] = _document()[option]
    return {name: float(value) for name, value in table.items()}


def default_json(option: str) -> str:
    """A built-in table as its option's default value."""
    return jsonutil.dumps_str(default_table(option))


_THINKING_BUDGETS = (("gemini-2.5-flash-lite", "gemini-2.5-flash-lite-thinking-*"),
                     ("gemini-2.5-flash", "gemini-2.5-flash-thinking-*"),
                     ("gemini-2.5-pro", "gemini-2.5-pro-thinking-*"))


def matching_name(model: str) -> str:
    """The name a model is priced under (new-api's FormatMatchingModelName)."""
    for prefix, wildcard in _THINKING_BUDGETS:
        if model.startswith(prefix):
            if "-thinking-" in model:
                model = wildcard
            break
    if model.startswith("gpt-4-gizmo"):
        return "gpt-4-gizmo-*"
    if model.startswith("gpt-4o-gizmo"):
        return "gpt-4o-gizmo-*"
    return model


_CLAUDE_FAMILIES = ("claude-3", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4", "claude-sonnet-5",
                    "claude-opus-5")
_COMMAND_RATIOS: dict[str, float] = {"command-r": 3, "command-r-plus": 5}
_LLAMA_RATIOS: dict[str, float] = {"llama2-70b-4096": 0.8 / 0.64, "llama3-8b-8192": 2, "llama3-70b-8192": 0.79 / 0.59}


def family_completion_ratio(name: str) -> float:
    """The completion ratio of ``name``'s family (new-api's getHardcodedCompletionModelRatio),
    for a model the CompletionRatio table does not name; 1 when no family knows it. Where new-api
    locks a family (its value wins over the table), the table's entry wins here: an operator whose
    upstream charges otherwise can say so. new-api's gpt-3.5 rules, which its ``gpt-`` branch
    shadows, are applied (OpenAI's prices: 3 for gpt-3.5-turbo and -0125, 2 for -1106)."""
    if name.endswith(("-all", "-gizmo-*")):
        return 2
    if name.startswith("gpt-"):
        return _gpt_completion_ratio(name)
    if name.startswith(("o1", "o3")):
        return 4
    if name == "chatgpt-4o-latest":
        return 3
    if any(family in name for family in _CLAUDE_FAMILIES):
        return 5
    if name.startswith("mistral-"):
        return 3
    if name.startswith("gemini-"):
        return _gemini_completion_ratio(name)
    if name.startswith("command"):
        return _COMMAND_RATIOS.get(name, 4)
    if name.startswith(("ERNIE-Speed-", "ERNIE-Lite-", "ERNIE-Character", "ERNIE-Functions")):
        return 2
    return _LLAMA_RATIOS.get(name, 1)


def _gpt_completion_ratio(name: str) -> float:
    if name.startswith("gpt-4o"):
        if name == "gpt-4o-2024-05-13":
            return 3
        return 20 if name.startswith("gpt-4o-mini-tts") else 4
    if name.startswith("gpt-5"):
        if "." not in name:
            return 8
        return 6.25 if name.startswith("gpt-5.4-nano") else 6
    if name.startswith("gpt-4.5-preview"):
        return 2
    if name.startswith("gpt-4-turbo") or name.endswith(("gpt-4-1106", "gpt-4-1105")):
        return 3
    if name.startswith("gpt-3.5"):
        if name == "gpt-3.5-turbo" or name.endswith("0125"):
            return 3
        return 2 if name.endswith("1106") else 4 / 3
    return 2


def _gemini_completion_ratio(name: str) -> float:
    if name.startswith(("gemini-1.5", "gemini-2.0")):
        return 4
    if name.startswith("gemini-2.5-pro"):
        return 8
    if name.startswith("gemini-2.5-flash"):
        if name.startswith("gemini-2.5-flash-preview"):
            return 4 if name.endswith("-nothinking") else 3.5 / 0.15
        return 4 if name.startswith("gemini-2.5-flash-lite") else 2.5 / 0.3
    if name.startswith("gemini-robotics-er-1.5"):
        return 2.5 / 0.3
    if name.startswith("gemini-3-pro"):
        return 60 if name.startswith("gemini-3-pro-image") else 6
    return 4
