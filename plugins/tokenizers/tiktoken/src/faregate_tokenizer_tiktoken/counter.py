"""Which encoding counts which model, and the counting itself.

The encoding of a model is tiktoken's own answer (``tiktoken.encoding_name_for_model``:
its model table and name prefixes); an OpenAI-family name tiktoken does not know yet (a
newer model, a fine-tune, a router's ``openai/`` prefix) gets ``o200k_base``, the encoding
of every current OpenAI model. Any other model (Claude, Gemini, Llama …) is not counted
here: its tokenizer is not OpenAI's, so the gateway keeps its estimator's rule for it, as
new-api does.
"""

from __future__ import annotations

import functools
import re
import unicodedata

import tiktoken

from faregate_tokenizer_tiktoken import offline

#: an OpenAI-family model name (new-api's rule: it contains ``gpt-`` or ``chatgpt``, or is an
#: o-series name such as ``o3`` or ``o4-mini-2025-04-16``)
OPENAI_NAME = re.compile(r"gpt-|chatgpt|^o\d+(?:-|$)")
#: encodings whose counts are another's: ``o200k_harmony`` (gpt-oss) is o200k_base's
#: vocabulary and pattern plus special tokens, which counting plain text never produces
SAME_COUNTS = {"o200k_harmony": "o200k_base"}
#: text longer than this is encoded in pieces: tiktoken slows down more than linearly on
#: one long pre-token (a megabyte of one letter takes ~0.9 s, in pieces ~0.2 s)
CHUNK = 8192


@functools.lru_cache(maxsize=4096)  # model names come from clients: bounded
def encoding_name(model: str) -> str | None:
    """The offline encoding that counts ``model``, or None (not an OpenAI model, or one
    whose encoding is not shipped: the retired r50k/p50k models)."""
    name = model.strip().lower().rsplit("/", 1)[-1]  # "openai/gpt-4o": a router's vendor prefix
    try:
        found: str | None = tiktoken.encoding_name_for_model(name)
    except KeyError:
        found = "o200k_base" if OPENAI_NAME.search(name) else None
    if found is None:
        return None
    found = SAME_COUNTS.get(found, found)
    return found if found in offline.ENCODINGS else None


#: a punctuation mark or symbol right after a letter (checked again with unicodedata: marks
#: such as Thai vowel signs are not ``\w`` but belong to the letters before them)
_PUNCT_AFTER_LETTER = re.compile(r"(?<=[^\W\d_])[^\w\s']")


def _cut(text: str, low: int, high: int) -> int:
    """Where to end a piece within ``text[low:high]``: where tiktoken's pattern (o200k's and
    cl100k's alike) starts a new pre-token anyway, so both pieces count as the whole does.
    Before a space that follows a non-space; failing that (CJK, Thai: no spaces) before a
    punctuation mark or symbol that follows a letter (a letter run ends there, and the mark
    opens the next pre-token); failing both, ``high`` (a token at most is then off)."""
    cut = text.rfind(" ", low, high)
    while cut > low and text[cut - 1].isspace():
        cut = text.rfind(" ", low, cut)
    if cut > low:
        return cut
    for match in reversed(list(_PUNCT_AFTER_LETTER.finditer(text, low, high))):
        at = match.start()
        if unicodedata.category(text[at])[0] in "PS" and unicodedata.category(text[at - 1])[0] == "L":
            return at
    return high


def pieces(text: str, size: int = CHUNK) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters at pre-token boundaries
    (:func:`_cut`), so their counts add up to the whole text's."""
    out: list[str] = []
    start, end = 0, len(text)
    while end - start > size:
        cut = _cut(text, start + size // 2, start + size)
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


class TiktokenTokenizer:
    """Counts text with one tiktoken encoding (plain text: special-token markers such as
    ``<|endoftext|>`` in a prompt count as the text they are, as OpenAI counts them)."""

    __slots__ = ("name", "encoding_name")

    def __init__(self, encoding_name: str) -> None:
        self.encoding_name = encoding_name
        self.name = f"tiktoken/{encoding_name}"

    def count(self, text: str) -> int:
        encoding = offline.encoding(self.encoding_name)  # built: the counter hands out built ones only
        if len(text) <= CHUNK:
            return len(encoding.encode_ordinary(text))
        return sum(len(encoding.encode_ordinary(piece)) for piece in pieces(text))


class TiktokenCounter:
    """What the plugin registers (``register_token_counters``): tiktoken's tokenizer for
    OpenAI-family models, None for the rest."""

    def __init__(self) -> None:
        self._tokenizers = {name: TiktokenTokenizer(name) for name in offline.ENCODINGS}

    def tokenizer(self, model: str) -> TiktokenTokenizer | None:
        name = encoding_name(model)
        if name is None or offline.broken(name):  # not ours, or unbuildable: the estimator's rule
            return None
        if not offline.ready(name):  # first need: built on the side; this bill keeps the rule
            offline.build_soon(name)
            return None
        return self._tokenizers[name]
