"""Which model counts with which encoding, and counting long texts in pieces without
changing the count."""

from __future__ import annotations

from pathlib import Path

import pytest

from faregate_tokenizer_tiktoken import offline, preload
from faregate_tokenizer_tiktoken.counter import CHUNK, TiktokenCounter, encoding_name, pieces

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize(("model", "encoding"), [
    ("gpt-4o", "o200k_base"),
    ("gpt-4o-mini-2024-07-18", "o200k_base"),
    ("gpt-4.1-nano", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3-mini", "o200k_base"),
    ("o4-mini-2025-04-16", "o200k_base"),
    ("chatgpt-4o-latest", "o200k_base"),
    ("ft:gpt-4o-mini:acme::abc123", "o200k_base"),
    ("gpt-oss-120b", "o200k_base"),  # o200k_harmony: o200k_base's vocabulary
    ("gpt-4", "cl100k_base"),
    ("gpt-4-turbo", "cl100k_base"),
    ("gpt-3.5-turbo-0125", "cl100k_base"),
    ("text-embedding-3-small", "cl100k_base"),
    # OpenAI-family names tiktoken does not know (yet): o200k_base
    ("gpt-6-preview", "o200k_base"),
    ("o7", "o200k_base"),
    ("openai/gpt-4o", "o200k_base"),
    ("GPT-4o", "o200k_base"),
    # other vendors keep the estimator's rule, as do the retired encodings not shipped
    ("claude-3-5-sonnet-20241022", None),
    ("gemini-2.5-pro", None),
    ("deepseek-chat", None),
    ("llama-3.1-70b-instruct", None),
    ("qwen-max", None),
    ("text-davinci-003", None),
    ("davinci", None),
    ("my-o1-proxy", None),
    ("", None),
])
def test_encoding_per_model(model: str, encoding: str | None) -> None:
    preload()  # built (the counter hands out built encodings only)
    assert encoding_name(model) == encoding
    tokenizer = TiktokenCounter().tokenizer(model)
    assert (tokenizer.name if tokenizer else None) == (f"tiktoken/{encoding}" if encoding else None)


def prose() -> str:
    """Real text with every kind of whitespace run: the repository's own docs."""
    return "\n\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))


def test_pieces_cut_before_a_space_and_keep_everything() -> None:
    text = prose()
    assert len(text) > 10 * CHUNK
    cut = pieces(text)
    assert "".join(cut) == text
    assert all(len(p) <= CHUNK for p in cut)
    # each cut is just before a space that follows a non-space (where a pre-token starts)
    assert all(p.startswith(" ") and not before[-1].isspace() for before, p in zip(cut, cut[1:], strict=False))
    cjk = "请用一句话解释一下为什么天空是蓝色的，并且给出一个简单的例子。" * 1000  # no space at all
    assert all(p[0] in "，。" for p in pieces(cjk)[1:])  # cut before punctuation that follows a letter
    runs = "a" * (3 * CHUNK + 5)
    assert [len(p) for p in pieces(runs)] == [CHUNK, CHUNK, CHUNK, 5]  # no space: cut hard


LONG_TEXTS = {
    "prose": lambda: prose() + "  double  spaces   and\ttabs \n indented\n" * 500,
    "cjk": lambda: "请用一句话解释一下为什么天空是蓝色的，并且给出一个简单的例子。「引号」（括号）" * 1200,
    "thai": lambda: "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ," * 2000,  # vowel signs are marks, not punctuation
    "code": lambda: "def f(x):\n\treturn {'a': [1, 2, 3], \"b\": x ** 2}  # it's fine\n" * 3000,
}


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
@pytest.mark.parametrize("kind", sorted(LONG_TEXTS))
def test_long_text_counts_as_a_whole(model: str, kind: str) -> None:
    text = LONG_TEXTS[kind]()
    assert len(text) > 4 * CHUNK
    tokenizer = TiktokenCounter().tokenizer(model)
    assert tokenizer is not None
    whole = offline.encoding(tokenizer.name.split("/")[1]).encode_ordinary(text)  # tiktoken's Encoding
    assert tokenizer.count(text) == len(whole)


def test_one_long_run_is_counted_in_pieces() -> None:
    """A megabyte with no space: counted piece by piece (each at most CHUNK characters), a
    token per cut at most away from the whole."""
    tokenizer = TiktokenCounter().tokenizer("gpt-4o")
    assert tokenizer is not None
    text = "a" * (1 << 20)
    whole = len(offline.encoding("o200k_base").encode_ordinary("a" * (8 * CHUNK)))
    assert abs(tokenizer.count("a" * (8 * CHUNK)) - whole) <= 8
    assert tokenizer.count(text) > 0
