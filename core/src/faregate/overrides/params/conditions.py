"""Whether an operation runs: its conditions compared with the body's value at a path,
else with the request's context (OR or AND, ``invert``, ``pass_missing_key``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faregate import jsonutil
from faregate.overrides.params.model import Condition
from faregate.overrides.params.paths import _MISSING, _resolve_negative, get


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return jsonutil.dumps_str(value)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _equal(actual: Any, wanted: Any) -> bool:
    if actual is None or wanted is None:
        return actual is None and wanted is None
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return isinstance(actual, bool) and isinstance(wanted, bool) and actual == wanted
    a, w = _number(actual), _number(wanted)
    if a is not None or w is not None:
        return a is not None and w is not None and a == w
    return bool(type(actual) is type(wanted) and actual == wanted)


def _compare(actual: Any, condition: Condition) -> bool:
    mode, wanted = condition.mode, condition.value
    if mode == "full":
        return _equal(actual, wanted)
    if mode in ("prefix", "suffix", "contains"):
        text, part = _as_text(actual), _as_text(wanted)
        return text.startswith(part) if mode == "prefix" else text.endswith(part) if mode == "suffix" \
            else part in text
    a, w = _number(actual), _number(wanted)
    if a is None or w is None:
        return False
    return a > w if mode == "gt" else a >= w if mode == "gte" else a < w if mode == "lt" else a <= w


def conditions_hold(body: Any, context: Mapping[str, Any], conditions: tuple[Condition, ...],
                    logic_and: bool) -> bool:
    if not conditions:
        return True
    matched_any = False
    for condition in conditions:
        value = get(body, _resolve_negative(body, condition.path))
        if value is _MISSING:
            value = get(context, condition.path)
        matched = condition.pass_missing_key if value is _MISSING else \
            _compare(value, condition) != condition.invert
        if logic_and and not matched:
            return False
        matched_any = matched_any or matched
    return True if logic_and else matched_any
