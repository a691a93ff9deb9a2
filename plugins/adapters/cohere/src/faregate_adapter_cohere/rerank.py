"""Cohere's reranker (``POST /v2/rerank``) behind the gateway's ``/v1/rerank`` (the OpenAI
plugin's driver, which takes new-api's Jina/Cohere shape): the request as Cohere v2 takes
it, the answer in new-api's normalised shape. Pure functions; no I/O.

Cohere v2 takes documents as strings only (``{"text": …}`` objects are sent as their text)
and no longer returns them: new-api's Cohere channel asks for them and shows them, so the
results carry ``{"text": …}`` of the documents sent unless the client set
``return_documents`` false. Cohere bills search units, not tokens: an answer reports no
tokens unless ``meta.billed_units.input_tokens`` says some (then the bill is the
gateway's estimate, as new-api's)."""

from __future__ import annotations

from typing import Any

from faregate.api import json_loads

MAX_COUNT = 2**31 - 1


def _text(doc: Any) -> str:
    return doc if isinstance(doc, str) else str(doc["text"])


def request_body(body: dict[str, Any]) -> dict[str, Any]:
    """The v2 rerank body of the gateway's checked request (``model``, ``query``,
    ``documents``, ``top_n``; ``return_documents`` has no v2 field)."""
    out: dict[str, Any] = {"model": body["model"], "query": body["query"],
                           "documents": [_text(d) for d in body["documents"]]}
    if body.get("top_n") is not None:
        out["top_n"] = body["top_n"]
    return out


def _tokens(meta: Any) -> int:
    billed = meta.get("billed_units") if isinstance(meta, dict) else None
    value = billed.get("input_tokens") if isinstance(billed, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_COUNT:
        return 0
    return int(value)


def read_answer(body: bytes, request: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The results of a ``V2RerankResponse`` (each with its document, as asked) and the
    tokens it reports; ``ValueError`` / ``KeyError`` / ``TypeError`` when it is not one."""
    obj = json_loads(body)
    items = obj["results"]
    if not isinstance(items, list):
        raise ValueError("results")
    documents = request["documents"]
    with_documents = request.get("return_documents") is not False
    results = []
    for item in items:
        result = {"index": item["index"], "relevance_score": item["relevance_score"]}
        index = result["index"]
        if with_documents and isinstance(index, int) and 0 <= index < len(documents):
            result["document"] = {"text": _text(documents[index])}
        results.append(result)
    return results, _tokens(obj.get("meta"))
