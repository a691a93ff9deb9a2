"""The one token estimator: what every format uses to size a prompt (reservations,
bills without upstream usage, ``count_tokens`` endpoints).

The core ships no tokenizer: its rule is a vendor-neutral approximation, and a bill made
from it is marked ``usage_source: estimated``. A plugin may register exact counters
(``register_token_counters``, :class:`TokenCounter`); the core then re-runs a format's
own counting code with the exact counter in force (:func:`exact_counting`) where the
count matters and can be afforded: a bill whose upstream reported no usage, a
``count_tokens`` endpoint. Reservations stay on the rule: it is cheap, and an exact count
on every request would cost the hot path for a number the upstream reports anyway."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from faregate import jsonutil


class Tokenizer(Protocol):
    """Counts one model family's text exactly (its vocabulary, e.g. tiktoken's
    ``o200k_base``). Synchronous and CPU-bound: the core calls it off the event loop,
    or on it only for small inputs."""

    #: what it is, for the log (``other.token_counter``): ``tiktoken/o200k_base``
    name: str

    def count(self, text: str) -> int:
        """Tokens of ``text`` as plain text (special-token markers count as text)."""
        ...


class TokenCounter(Protocol):
    """What ``register_token_counters`` hands over: the exact tokenizer of the models it
    knows. Asked once per counted request, with the model the upstream was called with."""

    def tokenizer(self, model: str) -> Tokenizer | None:
        """The tokenizer of ``model``, or None to leave it to the next counter (and in the
        end to the estimator's rule)."""
        ...


#: the exact tokenizer in force for this context (None: the rule). A context variable, so
#: it follows the code that set it into worker threads (``asyncio.to_thread`` copies the
#: context) and never leaks into another request's task
_exact: ContextVar[Tokenizer | None] = ContextVar("faregate_exact_tokenizer", default=None)


@contextmanager
def exact_counting(tokenizer: Tokenizer) -> Iterator[None]:
    """Within the block, :meth:`TokenEstimator.text` (and so every format's own counting
    code) counts with ``tokenizer``. Images, audio and the fixed allowances are unchanged."""
    token = _exact.set(tokenizer)
    try:
        yield
    finally:
        _exact.reset(token)


class TokenEstimator:
    """About four characters a token for ASCII text, one token a character for other
    scripts (CJK …), fixed allowances for images and per message; the exact tokenizer
    instead for text, where one is in force (:func:`exact_counting`)."""

    #: a full-size image (~1.15 megapixels, Anthropic's figure; OpenAI's high detail is close)
    IMAGE_TOKENS = 1600
    #: role markers and separators around each message
    MESSAGE_OVERHEAD = 3
    #: per tool definition, beside its JSON
    TOOL_OVERHEAD = 10

    def text(self, text: str) -> int:
        exact = _exact.get()  # one context-variable read: the relay's hot path stays on the rule
        if exact is not None:
            return exact.count(text)
        return self.rule(text)

    def rule(self, text: str) -> int:
        """Tokens of ``text`` by the rule, whatever tokenizer is in force (a tokenizer that
        only watches the text, such as the prompt's sensitive-word scan, answers this)."""
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
