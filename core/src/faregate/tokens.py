"""The one token estimator: what every format uses to size a prompt (reservations,
bills without upstream usage, ``count_tokens`` endpoints). No tokenizer is shipped;
the rule is a vendor-neutral approximation, and a bill made from it is marked
``usage_source: estimated``."""

from __future__ import annotations

from typing import Any

from faregate import jsonutil


class TokenEstimator:
    """About four characters a token for ASCII text, one token a character for other
    scripts (CJK …), fixed allowances for images and per message."""

    #: a full-size image (~1.15 megapixels, Anthropic's figure; OpenAI's high detail is close)
    IMAGE_TOKENS = 1600
    #: role markers and separators around each message
    MESSAGE_OVERHEAD = 3
    #: per tool definition, beside its JSON
    TOOL_OVERHEAD = 10

    def text(self, text: str) -> int:
        if text.isascii():
            return (len(text) + 3) // 4
        ascii_chars = len(text.encode("ascii", "ignore"))  # C speed, even for megabytes
        return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)

    def chars(self, count: int) -> int:
        """Tokens in ``count`` characters of text whose script is unknown."""
        return (count + 3) // 4

    def json(self, value: Any) -> int:
        """Tokens of a JSON value as a model sees it (tool schemas, tool inputs)."""
        return self.text(jsonutil.dumps_str(value))

    def tools(self, tools: list[Any]) -> int:
        return self.json(tools) + self.TOOL_OVERHEAD * len(tools) if tools else 0


estimator = TokenEstimator()
