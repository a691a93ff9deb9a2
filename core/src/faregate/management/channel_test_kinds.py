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
