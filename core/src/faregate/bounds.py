"""Declared bounds of the numbers a client sends: a format lists its numeric fields with
their ranges, and anything outside is a 400 naming the field, in the route's own error
format, before any arithmetic or upstream call sees it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from faregate.errors import bad_request

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class NumberBound:
    lo: float
    hi: float
    integer: bool = False


def _show(value: float) -> str:
    if isinstance(value, int):  # may be far beyond a float's range
        text = str(value)
        return text if len(text) <= 24 else f"{text[:12]}… ({len(text)} digits)"
    return f"{value:g}"


def check_numbers(body: Mapping[str, Any], bounds: Mapping[str, NumberBound]) -> None:
    """400 for the first field of ``bounds`` present in ``body`` (and not null) that is not
    a number in its range (an integer where ``integer``; never a boolean, NaN or infinity),
    with OpenAI's codes and wording (``integer_below_min_value``, ``invalid_type`` …)."""
    for name, bound in bounds.items():
        value = body.get(name)
        if value is None:
            continue
        kind = "integer" if bound.integer else "decimal"
        typed = (not isinstance(value, bool) and isinstance(value, int | float)
                 and (isinstance(value, int) or (not bound.integer and math.isfinite(value))))
        if not typed:
            raise bad_request(f"Invalid type for '{name}': expected {'an' if bound.integer else 'a'} {kind} "
                              f"from {bound.lo:g} to {bound.hi:g}.", code="invalid_type", param=name)
        if value < bound.lo:
            raise bad_request(f"Invalid '{name}': {kind} below minimum value. Expected a value >= {bound.lo:g}, "
                              f"but got {_show(value)} instead.", code=f"{kind}_below_min_value", param=name)
        if value > bound.hi:
            raise bad_request(f"Invalid '{name}': {kind} above maximum value. Expected a value <= {bound.hi:g}, "
                              f"but got {_show(value)} instead.", code=f"{kind}_above_max_value", param=name)
