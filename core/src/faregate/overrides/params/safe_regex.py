"""An admin's regex, refused when it could backtrack exponentially: it runs on callers'
text on the event loop. Shared by the parameter and the header override."""

from __future__ import annotations

import re

from faregate.overrides.params.model import MAX_PATTERN

_NESTED_QUANTIFIER = re.compile(r"[*+?}]")


def compile_pattern(pattern: str, where: str) -> re.Pattern[str]:
    """An admin's regex, refused when it could take exponential time on a crafted input
    (a quantified group holding a quantifier or an alternation, a back-reference): it runs
    on callers' text, on the event loop."""
    if not pattern or len(pattern) > MAX_PATTERN:
        raise ValueError(f"{where}: a regex of 1 to {MAX_PATTERN} characters is required")
    if re.search(r"\\[1-9]|\(\?P=", pattern):
        raise ValueError(f"{where}: back-references are not allowed")
    stack: list[int] = []
    escaped = in_class = False
    for i, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            stack.append(i)
        elif char == ")" and stack:
            start = stack.pop()
            quantified = i + 1 < len(pattern) and pattern[i + 1] in "*+?{"
            inner = re.sub(r"\\.|\[(?:\\.|[^\]])*\]", "", pattern[start + 1:i]).lstrip("?:")
            if quantified and (_NESTED_QUANTIFIER.search(inner) or "|" in inner):
                raise ValueError(f"{where}: a repeated group may not hold a quantifier or an alternation "
                                 "(it could take exponential time)")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{where}: not a valid regex ({exc})") from None
