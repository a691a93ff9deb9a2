"""new-api's sensitive words: a relay request whose prompt contains one is refused before
any upstream call and before anything is reserved (``CheckSensitiveEnabled``,
``CheckSensitiveOnPromptEnabled``, ``SensitiveWords``).

Matching is new-api's: case-insensitive substrings, every word in one pass over the text
(an Aho-Corasick automaton, built once per change of the option, when it is parsed). The
text is what the request's format counts as its prompt: the scan runs *inside* the format's
own token estimate (:func:`faregate.tokens.exact_counting` with a tokenizer that watches
each text and answers the rule's count), so no format keeps a second walker, the estimate
is unchanged, and a big body is scanned where its estimate runs (off the event loop, in the
big-body lane). The code and message are new-api's, ``sensitive_words_detected`` (the words
are logged, never told to the client); the status is 400 where new-api sends 500: the refusal
is the request's, not a fault of the gateway's, so monitoring does not count it as a server
error and no client retries it (``X-Should-Retry: false`` as well, for the SDKs)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import ahocorasick

from faregate.errors import GatewayError
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec
from faregate.tokens import estimator, exact_counting

if TYPE_CHECKING:
    from faregate.state.options import Options

log = logging.getLogger("faregate.relay")

P = ParamSpec("P")
T = TypeVar("T")

#: the largest word list accepted (one word a line)
MAX_WORDS_CHARS = 1_048_576
#: where an exchange keeps the words its prompt scan found (``Exchange.extra``)
FOUND_KEY = "faregate.sensitive_words"
CODE = "sensitive_words_detected"


class WordMatcher:
    """Finds the configured words in a text, case-insensitively, in one pass."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self._automaton = ahocorasick.Automaton()
        for word in words:
            self._automaton.add_word(word, word)
        self._automaton.make_automaton()

    def first(self, text: str) -> str | None:
        """The first word found in ``text`` (new-api stops at the first hit), or None."""
        for _end, word in self._automaton.iter(text.lower()):
            return str(word)
        return None


def parse_words(value: str) -> WordMatcher | None:
    """new-api's ``SensitiveWords``: one word a line, trimmed, blank lines dropped; matched
    lower-cased. None when there is no word (nothing to scan)."""
    if len(value) > MAX_WORDS_CHARS:
        raise ValueError(f"expected at most {MAX_WORDS_CHARS} characters")
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    words = list(dict.fromkeys(w.strip().lower() for w in value.split("\n") if w.strip()))
    return WordMatcher(words) if words else None


SENSITIVE_OPTIONS: tuple[OptionSpec, ...] = (
    # new-api's defaults: the check is on, with one word that no real prompt contains
    OptionSpec("CheckSensitiveEnabled", "true", "Check relay requests for SensitiveWords (with "
               "CheckSensitiveOnPromptEnabled): a prompt containing one is refused with "
               f"{CODE}, before any upstream call and without charge.", specs.boolean),
    OptionSpec("CheckSensitiveOnPromptEnabled", "true", "Check the prompt of relay requests for SensitiveWords "
               "(when CheckSensitiveEnabled is on).", specs.boolean),
    OptionSpec("StopOnSensitiveEnabled", "true", "new-api's switch for answers containing a sensitive word; "
               "answers are not checked (as in new-api, whose answer check is disabled), so it changes nothing.",
               specs.boolean),
    OptionSpec("SensitiveWords", "test_sensitive", "Words (one a line) a prompt may not contain, matched "
               "case-insensitively anywhere in its text.",
               specs.described(parse_words, "lines", max_length=MAX_WORDS_CHARS)),
)


def prompt_matcher(options: Options) -> WordMatcher | None:
    """The matcher to scan prompts with, None when the check is off or there is no word."""
    values = options.values
    if not (values.get("CheckSensitiveEnabled") and values.get("CheckSensitiveOnPromptEnabled")):
        return None
    matcher = values.get("SensitiveWords")
    return matcher if isinstance(matcher, WordMatcher) else None


class PromptScan:
    """A tokenizer that watches every text a format's estimate counts, remembering the first
    sensitive word, and counts by the rule (so the estimate is what it would be without it)."""

    name = "sensitive-words"

    def __init__(self, matcher: WordMatcher) -> None:
        self.matcher = matcher
        self.found: str | None = None

    def count(self, text: str) -> int:
        if self.found is None:
            self.found = self.matcher.first(text)
        return estimator.rule(text)

    def run(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``work`` (a format's summary of the body) with the scan in force, in the thread it
        runs in (a worker thread's context is a copy: set there, not around the call)."""
        with exact_counting(self):
            return work(*args, **kwargs)


def scan_texts(options: Options, texts: list[str]) -> str | None:
    """The first sensitive word in ``texts`` (a prompt not counted by a summary: an image's,
    a speech's input), None when there is none or the check is off."""
    matcher = prompt_matcher(options)
    if matcher is None:
        return None
    return next((word for word in map(matcher.first, texts) if word is not None), None)


def refuse(extra: dict[str, Any]) -> None:
    """Raise new-api's refusal when the prompt scan found a word (the word goes to the log only)."""
    word = extra.get(FOUND_KEY)
    if word is None:
        return
    log.warning("user sensitive words detected: %s", word)
    raise GatewayError(400, CODE, code=CODE, should_retry=False)
