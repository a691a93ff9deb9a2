"""Reading Gemini JSON by field name. Google's JSON parser takes every field under its
lowerCamelCase name and under the proto's snake_case one (``inlineData`` or
``inline_data``; the REST docs' curl examples use the latter), so the gateway reads both."""

from __future__ import annotations

import functools
import re
from typing import Any

_UPPER = re.compile(r"(?<!^)(?=[A-Z])")


@functools.cache
def snake(name: str) -> str:
    """``inlineData`` → ``inline_data``."""
    return _UPPER.sub("_", name).lower()


def get(obj: dict[str, Any], name: str) -> Any:
    """``obj[name]`` under its camelCase or snake_case spelling (None, like proto3, when
    absent or null)."""
    value = obj.get(name)
    if value is None:
        alias = snake(name)
        if alias != name:
            value = obj.get(alias)
    return value


def has(obj: dict[str, Any], name: str) -> bool:
    return get(obj, name) is not None
