"""What ``GET /api/channel/test/{id}?endpoint_type=`` sends for each endpoint kind: a
minimal request (one word in, a few tokens out) and how its answer is recognised. The
names are new-api's ``endpoint_type`` values; the request goes through the channel's own
provider, so a kind the provider does not serve is refused by name.

A chat test (``openai``, ``anthropic``, ``gemini``, the default) is the canonical request
in the provider's own wire format, as a converted relay request; the others are the
JSON endpoints a provider serves with ``build_json(endpoint, body, raw, target)``
(OpenAI's family)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TEST_PROMPT = "hi"
TEST_MAX_TOKENS = 16


@dataclass(frozen=True, slots=True)
class EndpointTest:
    #: the endpoint kind providers declare (:attr:`Provider.endpoints`)
    endpoint: str
    #: the request body for a model (None: the chat test)
    body: Callable[[str], dict[str, Any]] | None = None
    #: the list an answer must carry ("": any JSON object)
    answer_list: str = ""


CHAT = EndpointTest("chat")
#: new-api's endpoint types (and the Faregate endpoint kinds, accepted by their own names)
ENDPOINT_TESTS: dict[str, EndpointTest] = {
    "openai": CHAT,
    "anthropic": CHAT,
    "gemini": CHAT,
    "chat": CHAT,
    "openai-response": EndpointTest("responses", lambda model: {
        "model": model, "input": TEST_PROMPT, "max_output_tokens": TEST_MAX_TOKENS}, "output"),
    "embeddings": EndpointTest("embeddings", lambda model: {"model": model, "input": TEST_PROMPT}, "data"),
    "image-generation": EndpointTest("images", lambda model: {
        "model": model, "prompt": "a small blue dot", "n": 1}, "data"),
    "jina-rerank": EndpointTest("rerank", lambda model: {
        "model": model, "query": TEST_PROMPT, "documents": [TEST_PROMPT, "bye"], "top_n": 1}, "results"),
    "moderations": EndpointTest("moderations", lambda model: {"model": model, "input": TEST_PROMPT}, "results"),
    "completions": EndpointTest("completions", lambda model: {
        "model": model, "prompt": TEST_PROMPT, "max_tokens": TEST_MAX_TOKENS}, "choices"),
}
ENDPOINT_TESTS["responses"] = ENDPOINT_TESTS["openai-response"]
ENDPOINT_TESTS["images"] = ENDPOINT_TESTS["image-generation"]
ENDPOINT_TESTS["rerank"] = ENDPOINT_TESTS["jina-rerank"]
MAX_ENDPOINT_TYPE = 64


def endpoint_test(name: str) -> EndpointTest | None:
    """The test of an ``endpoint_type`` ("" is the chat test); None for a name we do not know."""
    return CHAT if not name else ENDPOINT_TESTS.get(name.strip().lower())


def recognised(answer: Any, test: EndpointTest) -> bool:
    """Whether a JSON answer is one of the endpoint's (the relay would pass it on)."""
    return isinstance(answer, dict) and (not test.answer_list or isinstance(answer.get(test.answer_list), list))
