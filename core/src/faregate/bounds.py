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


def check_numbers(body: Mapping[str, Any], bounds: Mapping[str, NumberBound]) -> None:
    """400 for the first field of ``bounds`` present in ``body`` (and not null) that is not
    a number in its range (an integer where ``integer``; never a boolean, NaN or infinity)."""
    for name, bound in bounds.items():
        value = body.get(name)
        if value is None:
            continue
        kind = "an integer" if bound.integer else "a number"
        ok = (not isinstance(value, bool) and isinstance(value, int | float)
              and (isinstance(value, int) or (not bound.integer and math.isfinite(value))))
        if not ok or not bound.lo <= value <= bound.hi:
            raise bad_request(f"{name} must be {kind} from {bound.lo:g} to {bound.hi:g}", param=name)
