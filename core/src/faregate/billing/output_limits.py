"""The most output a model writes in one answer (the ``ModelMaxOutputTokens`` option): what a
request that names no bound of its own reserves, and the bound it then goes upstream with, so
no answer can be billed beyond what was reserved for it.

The option maps a model to tokens; a name ending in ``*`` is a prefix (``gpt-5*`` is every
GPT-5 model), an exact name wins over a prefix and a longer prefix over a shorter one. A model
is looked up by its matching name, as the price tables do. A model the table does not name
gets ``DefaultMaxTokensReserve``.

The built-in table is the vendors' published output limits of well-known models (OpenAI's,
Anthropic's, Google's and DeepSeek's model pages; where a family's members differ, the
smallest, so a bound sent upstream is never one the vendor refuses). A stored option replaces
the whole table, as the price options do."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from faregate import jsonutil
from faregate.billing.ratios import matching_name

#: no model writes more in one answer (the bound of every max tokens field the gateway reads)
MAX_OUTPUT_TOKENS = 10_000_000
#: names in the table (a model name, or a prefix ending in ``*``)
MAX_NAME_LENGTH = 255
MAX_ENTRIES = 10_000

DEFAULT_OUTPUT_LIMITS: Mapping[str, int] = MappingProxyType({
    # OpenAI
    "gpt-3.5-turbo*": 4096,
    "gpt-4": 8192,
    "gpt-4-0613": 8192,
    "gpt-4-turbo*": 4096,
    "gpt-4-1106-preview": 4096,
    "gpt-4-0125-preview": 4096,
    "gpt-4o*": 16_384,
    "gpt-4o-2024-05-13": 4096,
    "gpt-4o-realtime-preview*": 4096,
    "gpt-4o-mini-realtime-preview*": 4096,
    "chatgpt-4o-latest": 16_384,
    "gpt-4.1*": 32_768,
    "gpt-4.5-preview*": 16_384,
    "gpt-5*": 128_000,
    "gpt-5-chat*": 16_384,
    "gpt-realtime*": 4096,
    "o1*": 100_000,
    "o1-mini*": 65_536,
    "o1-preview*": 32_768,
    "o3*": 100_000,
    "o4-mini*": 100_000,
    # Anthropic
    "claude-3-haiku*": 4096,
    "claude-3-sonnet*": 4096,
    "claude-3-opus*": 4096,
    "claude-3-5-haiku*": 8192,
    "claude-3-5-sonnet*": 8192,
    "claude-3-7-sonnet*": 64_000,
    "claude-sonnet-4*": 64_000,
    "claude-opus-4*": 32_000,
    "claude-opus-4-5*": 64_000,
    "claude-haiku-4-5*": 64_000,
    # Google
    "gemini-1.5*": 8192,
    "gemini-2.0-flash*": 8192,
    "gemini-2.5-pro*": 65_536,
    "gemini-2.5-flash*": 65_536,
    "gemini-2.5-flash-image*": 32_768,
    # DeepSeek
    "deepseek-chat": 8192,
    "deepseek-reasoner": 64_000,
})


@dataclass(frozen=True, slots=True)
class OutputLimits:
    """A parsed ``ModelMaxOutputTokens`` table: exact names, and prefixes longest first."""

    exact: Mapping[str, int]
    prefixes: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, table: Mapping[str, int]) -> OutputLimits:
        exact = {name: tokens for name, tokens in table.items() if not name.endswith("*")}
        prefixes = sorted(((name[:-1], tokens) for name, tokens in table.items() if name.endswith("*")),
                          key=lambda entry: len(entry[0]), reverse=True)
        return cls(MappingProxyType(exact), tuple(prefixes))

    def limit(self, model: str) -> int | None:
        """The table's output limit of ``model`` (by its matching name), None when it names none.
        A scan of the prefixes (a few dozen ``startswith``): no cache, so no client-chosen
        name is ever kept."""
        name = matching_name(model)
        found = self.exact.get(name)
        if found is not None:
            return found
        for prefix, tokens in self.prefixes:
            if name.startswith(prefix):
                return tokens
        return None


def default_json() -> str:
    return jsonutil.dumps_str(dict(DEFAULT_OUTPUT_LIMITS))


def parse_output_limits(value: str) -> OutputLimits:
    """``{"model": tokens, "prefix*": tokens}``: names of 1 to 255 characters, whole numbers
    from 1 to 10,000,000; ``ValueError`` naming the entry otherwise."""
    if not value.strip():
        return OutputLimits.of({})
    try:
        parsed = jsonutil.loads(value)
    except jsonutil.JSONDecodeError:
        raise ValueError("expected a JSON object of model names and output tokens") from None
    if not isinstance(parsed, dict):
        raise ValueError("expected a JSON object of model names and output tokens")
    if len(parsed) > MAX_ENTRIES:
        raise ValueError(f"expected at most {MAX_ENTRIES} models")
    table: dict[str, int] = {}
    for name, tokens in parsed.items():
        if not name or len(name) > MAX_NAME_LENGTH or name == "*":
            raise ValueError(f"names must be 1 to {MAX_NAME_LENGTH} characters (a prefix ends in *, after "
                             "at least one character)")
        if isinstance(tokens, bool) or not isinstance(tokens, int | float) or not math.isfinite(tokens) \
                or tokens != int(tokens) or not 1 <= tokens <= MAX_OUTPUT_TOKENS:
            raise ValueError(f"{name}: expected a whole number of tokens from 1 to {MAX_OUTPUT_TOKENS}")
        table[name] = int(tokens)
    return OutputLimits.of(table)
