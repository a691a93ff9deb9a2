"""Every runtime option (new-api's options table) declared with a type and a range: one
registry, the core's options plus those plugins declare through ``register_settings``.
A value is checked when an admin writes it (a bad one is a 400 naming the option, never
stored) and again when the options are loaded (a bad stored value, from before this
check or written by hand, falls back to the default and is logged, so it never reaches
the hot path)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from faregate import jsonutil
from faregate.state.plugin_options import unknown_option_message

Parser = Callable[[str], Any]

#: no ratio, price or quota multiplier beyond this is a sensible configuration
MAX_RATIO = 1e6
MAX_KEY_LENGTH = 255
#: an option named so is a secret whether or not it is declared one
SECRET_SUFFIXES = ("Token", "Secret", "Key", "secret", "api_key")


@dataclass(frozen=True)
class OptionSpec:
    """A runtime option: stored as text under ``key``; ``parse`` turns the text into the
    typed value or raises ``ValueError`` saying what it expects."""

    key: str
    default: str
    description: str
    parse: Parser
    #: never listed by ``GET /api/option/`` (keys, tokens, secrets)
    secret: bool = False


class OptionError(ValueError):
    """A value an option refuses; the message names the option."""


# ---- parsers ------------------------------------------------------------------------------
# Each parser says what it accepts (its ``form``), so forms can be generated from the registry
# (``GET /api/option/schema``): a kind, and the bounds or choices the parser checks.
KINDS = ("boolean", "integer", "number", "choice", "text", "lines", "json")


@dataclass(frozen=True)
class Form:
    """What a parser accepts, for a form: ``kind`` is one of :data:`KINDS`; ``minimum`` and
    ``maximum`` bound an integer or number, ``choices`` a choice, ``max_length`` a text."""

    kind: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    max_length: int | None = None


def form_of(parse: Parser, default: str = "") -> Form:
    """The form of a parser; one that does not describe itself (a plugin's own function) is
    JSON when its default is a JSON object or array, text otherwise."""
    form = getattr(parse, "form", None)
    if isinstance(form, Form):
        return form if form.kind in KINDS else Form("text", max_length=form.max_length)
    return Form("json" if default.lstrip()[:1] in ("{", "[") else "text")


@dataclass(frozen=True)
class Described:
    """A parser of its own (any function) with the form it accepts: ``described(fn, "json")``."""

    parse: Parser
    form: Form

    def __call__(self, text: str) -> Any:
        return self.parse(text)


def described(parse: Parser, kind: str, **bounds: Any) -> Parser:
    return Described(parse, Form(kind, **bounds))


@dataclass(frozen=True)
class _Number:
    lo: float
    hi: float

    @property
    def form(self) -> Form:
        return Form("number", minimum=self.lo, maximum=self.hi)

    def __call__(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or not self.lo <= value <= self.hi:
            raise ValueError(f"expected a number from {self.lo:g} to {self.hi:g}")
        return value


def number(lo: float, hi: float) -> Parser:
    return _Number(lo, hi)


@dataclass(frozen=True)
class _Integer:
    lo: int
    hi: int

    @property
    def form(self) -> Form:
        return Form("integer", minimum=self.lo, maximum=self.hi)

    def __call__(self, text: str) -> int:
        lo, hi = self.lo, self.hi
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"expected a whole number from {lo} to {hi}") from None
        if not lo <= value <= hi:
            raise ValueError(f"expected a whole number from {lo} to {hi}")
        return value


def integer(lo: int, hi: int) -> Parser:
    return _Integer(lo, hi)


@dataclass(frozen=True)
class _Boolean:
    form: Form = Form("boolean")

    def __call__(self, text: str) -> bool:
        word = text.strip().lower()
        if word in ("true", "1", "yes"):
            return True
        if word in ("false", "0", "no", ""):
            return False
        raise ValueError("expected true or false")


boolean: Parser = _Boolean()


@dataclass(frozen=True)
class _Text:
    max_len: int

    @property
    def form(self) -> Form:
        return Form("text", max_length=self.max_len)

    def __call__(self, value: str) -> str:
        if len(value) > self.max_len:
            raise ValueError(f"expected at most {self.max_len} characters")
        if "\x00" in value:
            raise ValueError("NUL characters are not allowed")
        return value


def text(max_len: int) -> Parser:
    return _Text(max_len)


@dataclass(frozen=True)
class _Choice:
    values: tuple[str, ...]

    @property
    def form(self) -> Form:
        return Form("choice", choices=self.values)

    def __call__(self, value: str) -> str:
        if value not in self.values:
            raise ValueError(f"expected one of {', '.join(self.values)}")
        return value


def choice(*values: str) -> Parser:
    return _Choice(values)


def _json_object(value: str) -> dict[str, Any]:
    if not value.strip():
        return {}
    try:
        parsed = jsonutil.loads(value)
    except jsonutil.JSONDecodeError:
        raise ValueError("expected a JSON object") from None
    if not isinstance(parsed, dict):
        raise ValueError("expected a JSON object")
    for key in parsed:
        if not key or len(key) > MAX_KEY_LENGTH:
            raise ValueError(f"names must be 1 to {MAX_KEY_LENGTH} characters")
    return parsed


def ratio_map(hi: float = MAX_RATIO) -> Parser:
    """``{"name": number}`` with every number finite and from 0 to ``hi``."""
    def parse(value: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, ratio in _json_object(value).items():
            if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not math.isfinite(ratio) \
                    or not 0 <= ratio <= hi:
                raise ValueError(f"{name}: expected a number from 0 to {hi:g}")
            out[name] = float(ratio)
        return out
    return described(parse, "json")


def _text_map(value: str) -> dict[str, str]:
    """``{"name": "text"}`` (group descriptions, say)."""
    parsed = _json_object(value)
    for name, item in parsed.items():
        if not isinstance(item, str):
            raise ValueError(f"{name}: expected a string")
    return parsed


text_map: Parser = described(_text_map, "json")


def status_ranges(value: str) -> list[tuple[int, int]]:
    """``"401,403,500-503"``: HTTP statuses and ranges of them."""
    ranges: list[tuple[int, int]] = []
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        lo_text, _, hi_text = part.partition("-")
        try:
            lo, hi = int(lo_text), int(hi_text or lo_text)
        except ValueError:
            raise ValueError(f"{part!r}: expected statuses like 401,403,500-503") from None
        if not 100 <= lo <= hi <= 599:
            raise ValueError(f"{part!r}: statuses are 100 to 599, low to high")
        ranges.append((lo, hi))
    return ranges


def _lines(value: str) -> list[str]:
    return [line.strip().lower() for line in text(65_536)(value).split("\n") if line.strip()]


#: one entry a line (lower-cased, blank lines dropped)
lines: Parser = described(_lines, "lines", max_length=65_536)


# ---- the registry ---------------------------------------------------------------------------
class OptionRegistry:
    def __init__(self, specs: Iterable[OptionSpec]) -> None:
        self.specs: dict[str, OptionSpec] = {}
        for spec in specs:
            self.specs.setdefault(spec.key, spec)  # first wins, as for every named thing

    def __contains__(self, key: str) -> bool:
        return key in self.specs

    def check(self, key: str, value: str) -> Any:
        """The typed value of ``value`` for option ``key``; :class:`OptionError` otherwise."""
        spec = self.specs.get(key)
        if spec is None:
            raise OptionError(unknown_option_message(key))
        try:
            return spec.parse(value)
        except (ValueError, TypeError, OverflowError) as exc:
            raise OptionError(f"{key}: {exc}") from None

    def defaults(self) -> dict[str, str]:
        return {key: spec.default for key, spec in self.specs.items()}

    def is_secret(self, key: str) -> bool:
        """Never listed nor shown: declared secret, or named like one (``…Token``, ``…Secret``, ``…Key``)."""
        return self.specs[key].secret or key.endswith(SECRET_SUFFIXES)
