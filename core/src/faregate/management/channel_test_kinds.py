"""What ``GET /api/channel/test/{id}?endpoint_type=`` tests: new-api's endpoint types, each
an endpoint kind. A chat test (``openai``, ``anthropic``, ``gemini``) is the canonical
request in the channel provider's own wire format, as a converted relay request; every
other kind is a minimal request the provider builds (:meth:`Provider.probe`: its own wire
format, so a Cohere rerank, a Gemini embedding or a Replicate image are tested as they are
relayed). A kind the channel cannot be tested on is refused by name.

Without ``endpoint_type`` the kind is new-api's guess from the model's name (a reranker, an
embedding model, a Codex model), else chat; when the channel's type cannot be tested on that
kind (a Replicate channel has no chat), the first of :data:`TEST_ORDER` it can."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

TEST_PROMPT = "hi"
TEST_MAX_TOKENS = 16
CHAT = "chat"
#: new-api's endpoint types, and Faregate's endpoint kinds by their own names → the kind tested
ENDPOINT_TESTS: dict[str, str] = {
    "openai": CHAT, "anthropic": CHAT, "gemini": CHAT, "chat": CHAT,
    "openai-response": "responses", "responses": "responses",
    "embeddings": "embeddings",
    "image-generation": "images", "images": "images",
    "jina-rerank": "rerank", "rerank": "rerank",
    "moderations": "moderations",
    "completions": "completions",
}
#: the kinds in the order a channel's default test prefers them
TEST_ORDER = (CHAT, "embeddings", "rerank", "images", "responses", "completions", "moderations")
MAX_ENDPOINT_TYPE = 64
#: kind → its test's body for a model, in the OpenAI family's wire format (a word in, the fewest
#: tokens or one image out); a provider of another format converts it as it converts a relayed body
_PROBE_BODIES: Mapping[str, Callable[[str], dict[str, Any]]] = MappingProxyType({
    "responses": lambda model: {"model": model, "input": TEST_PROMPT, "max_output_tokens": TEST_MAX_TOKENS},
    "embeddings": lambda model: {"model": model, "input": TEST_PROMPT},
    "images": lambda model: {"model": model, "prompt": "a small blue dot", "n": 1},
    "rerank": lambda model: {"model": model, "query": TEST_PROMPT, "documents": [TEST_PROMPT, "bye"], "top_n": 1},
    "moderations": lambda model: {"model": model, "input": TEST_PROMPT},
    "completions": lambda model: {"model": model, "prompt": TEST_PROMPT, "max_tokens": TEST_MAX_TOKENS},
})


def probe_body(kind: str, model: str) -> dict[str, Any]:
    """The body of a channel test of ``kind`` (any of :data:`TEST_ORDER` but chat, whose test
    is the canonical request) for ``model``: a new dict each call, the caller's to change."""
    return _PROBE_BODIES[kind](model)


def endpoint_kind(name: str) -> str | None:
    """The kind an ``endpoint_type`` tests ("" is the default: None is returned for a name we
    do not know, "" for none given)."""
    name = name.strip().lower()
    return "" if not name else ENDPOINT_TESTS.get(name)


def guessed_kind(model: str) -> str:
    """new-api's guess of a test's endpoint from the model's name (controller/channel-test.go):
    a reranker, an embedding model (``embedding``, ``embed``, ``bge-``, ``m3e``), a Codex model
    (the Responses API), else chat. A name that says both rerank and embedding (``bge-reranker``)
    is a reranker here (new-api tests it as an embedding model)."""
    lower = model.lower()
    if "rerank" in lower:
        return "rerank"
    if "embed" in lower or lower.startswith("m3e") or "bge-" in lower:
        return "embeddings"
    if "codex" in lower:
        return "responses"
    return CHAT
