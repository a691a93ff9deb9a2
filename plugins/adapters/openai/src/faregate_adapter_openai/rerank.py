"""Rerank (``POST /v1/rerank``) in the Jina/Cohere shape new-api serves: ``{model, query,
documents, top_n, return_documents}`` in, ``{results: [{index, relevance_score,
document?}], usage}`` out, relayed to channels whose provider serves the ``rerank``
endpoint kind at ``/v1/rerank`` (Jina, SiliconFlow, Custom and the other generic
OpenAI-compatible types), or in its own wire format when the provider implements
:class:`RerankProvider` (another plugin's: Cohere's ``/v2/rerank``).

As new-api does, the upstream gets the declared fields only (checked and bounded; the
channel's model name), and the answer is normalised: each result keeps ``index``,
``relevance_score`` and the ``document`` the upstream returned, ``usage`` is
``{prompt_tokens, completion_tokens: 0, total_tokens}``. Billed on the upstream's
``total_tokens`` (else its ``prompt_tokens``); an upstream that reports none is billed
on the gateway's count of the query and documents (exact where a tokenizer knows the model,
else the estimate), and its answer shows that count."""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Protocol, runtime_checkable

from faregate.api import (
    AttemptFailed,
    Exchange,
    GatewayError,
    InboundRequest,
    NumberBound,
    Outcome,
    Provider,
    RequestSummary,
    UpstreamRequest,
    UpstreamTarget,
    Usage,
    bad_request,
    check_numbers,
    estimator,
    json_loads,
    offer_exact_recount,
    settle_on_prompt,
)
from faregate_adapter_openai.endpoints import JsonEndpointProvider, prompt_estimate

RERANK = "rerank"
#: documents in one request (Cohere's documented maximum; Jina's is of the same order)
MAX_DOCUMENTS = 1000
#: the request body's cap, in MiB (1000 documents of a few pages each)
MAX_BODY_MB = 16.0
NUMBERS = {"top_n": NumberBound(1, MAX_DOCUMENTS, integer=True)}
#: the fields forwarded upstream (new-api re-encodes its request struct: nothing else goes)
FORWARDED = ("query", "documents", "top_n", "return_documents")
MAX_SCORE_TOKENS = 2**31 - 1


def _document_text(doc: Any) -> str:
    """A document's text: a string, or ``{"text": <string>}`` (nothing else: it goes upstream as
    it is); 400 otherwise."""
    if isinstance(doc, str):
        return doc
    if isinstance(doc, dict) and len(doc) == 1 and isinstance(doc.get("text"), str):
        return str(doc["text"])
    raise bad_request('each document must be a string or {"text": <string>}', param="documents")


def summarize_rerank(body: dict[str, Any], request: InboundRequest) -> RequestSummary:
    """Model, a non-empty query, 1 to :data:`MAX_DOCUMENTS` documents, ``top_n`` and
    ``return_documents`` checked; 400 naming the field otherwise (new-api's "query is
    empty" / "documents is empty")."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required", param="model")
    query = body.get("query")
    if not isinstance(query, str) or not query:
        raise bad_request("query is empty: a non-empty string is required", param="query")
    documents = body.get("documents")
    if not isinstance(documents, list) or not documents:
        raise bad_request("documents is empty: a non-empty array is required", param="documents")
    if len(documents) > MAX_DOCUMENTS:
        raise bad_request(f"documents may hold at most {MAX_DOCUMENTS} documents", param="documents")
    tokens = estimator.text(query) + sum(estimator.text(_document_text(doc)) for doc in documents)
    check_numbers(body, NUMBERS)
    returned = body.get("return_documents")
    if returned is not None and not isinstance(returned, bool):
        raise bad_request("return_documents must be a boolean", param="return_documents")
    return RequestSummary(model=model, stream=False, max_tokens=None, prompt_tokens=tokens)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SCORE_TOKENS else 0


@runtime_checkable
class RerankProvider(Protocol):
    """A provider whose rerank API has a wire format of its own (besides declaring the
    ``rerank`` endpoint kind). Structural: a plugin implements the two methods without
    importing this one. Both are pure; the operation does the I/O and the billing."""

    def build_rerank(self, body: dict[str, Any], target: UpstreamTarget) -> UpstreamRequest:
        """The upstream request for ``body``: the checked fields of :data:`FORWARDED` that were
        given, ``model`` the channel's name for it."""
        ...

    def read_rerank(self, body: bytes, request: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
        """The answer to ``request`` (what :meth:`build_rerank` got) as new-api's results
        (``{"index", "relevance_score", "document"?}``), and the tokens it reports (0: none);
        ``ValueError`` (``TypeError``, ``KeyError``…) when it is not a rerank answer."""
        ...


_SHAPE_ERRORS = (ValueError, TypeError, KeyError, AttributeError)  # incl. JSON errors


def _malformed() -> AttemptFailed:
    return AttemptFailed(GatewayError(502, "upstream sent a malformed rerank response", code="bad_response_body",
                                      upstream=True))


def checked_results(items: Any, documents: int) -> list[dict[str, Any]]:
    """``items`` as new-api's results: each an index of one of the ``documents`` and a
    numeric score, with the document the upstream returned; ``ValueError`` otherwise."""
    results = []
    for item in items:
        index, score = item["index"], item["relevance_score"]
        if not (isinstance(index, int) and 0 <= index < documents) or isinstance(index, bool) \
                or isinstance(score, bool) or not isinstance(score, int | float):
            raise ValueError("result")
        result: dict[str, Any] = {"index": index, "relevance_score": score}
        if item.get("document") is not None:
            result["document"] = item["document"]
        results.append(result)
    return results


def normalise(body: bytes, documents: int) -> tuple[list[dict[str, Any]], int]:
    """The results of an upstream's answer in new-api's shape, and the tokens its usage
    reports (0: none); :class:`AttemptFailed` when it is not a rerank answer."""
    try:
        obj = json_loads(body)
        results = checked_results(obj["results"], documents)
        usage = obj.get("usage")
    except _SHAPE_ERRORS:
        raise _malformed() from None
    tokens = 0
    if isinstance(usage, dict):  # Jina: total_tokens; some others: prompt_tokens only
        tokens = _count(usage.get("total_tokens")) or _count(usage.get("prompt_tokens"))
    return results, tokens


class RerankOperation:
    """One attempt: the declared fields up, the normalised answer down."""

    endpoint = RERANK

    def serves(self, provider: Provider, channel_type: int) -> bool:
        return provider.serves(RERANK, channel_type) and isinstance(provider, RerankProvider | JsonEndpointProvider)

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        body = {"model": target.model, **{k: ex.body[k] for k in FORWARDED if ex.body.get(k) is not None}}
        if isinstance(provider, RerankProvider):
            return provider.build_rerank(body, target)
        assert isinstance(provider, JsonEndpointProvider)
        return provider.build_json(RERANK, body, b"", target)

    async def finish(self, ex: Exchange, provider: Provider, resp: Any, passthrough: bool) -> Outcome:
        try:
            body = await resp.aread()
        except Exception:  # noqa: BLE001 - the transport's own error types
            raise AttemptFailed(GatewayError(502, "upstream closed the connection mid-response",
                                             code="read_response_body_failed", upstream=True)) from None
        finally:
            await resp.aclose()
        ex.upstream_seconds += time.perf_counter() - ex.answer_at
        ex.answer_at = 0.0
        assert ex.summary is not None
        documents = len(ex.body["documents"])
        if isinstance(provider, RerankProvider):
            request = {k: ex.body[k] for k in FORWARDED if ex.body.get(k) is not None}
            try:
                results, tokens = provider.read_rerank(body, request)
                results = checked_results(results, documents)
            except _SHAPE_ERRORS:
                raise _malformed() from None
            tokens = _count(tokens)
        else:
            results, tokens = normalise(body, documents)
        if tokens == 0:  # none reported: new-api bills (and shows) its own count
            tokens = await settle_on_prompt(ex)
        else:
            ex.settle(Usage(input_tokens=tokens), end_reason="done")
        return ex.json({"results": results,
                        "usage": {"prompt_tokens": tokens, "completion_tokens": 0, "total_tokens": tokens}})


OPERATION = RerankOperation()


class RerankDriver:
    """``POST /v1/rerank``: authenticate, read, check, admit, relay."""

    kind = RERANK

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        raw, body = await ex.read_json()
        # a thousand long documents take a while to estimate: a big body's, off the loop
        summary = await ex.work_on_body(raw, summarize_rerank, body, ex.request)
        ex.begin(summary, body, raw)
        # should the upstream report no usage, its bill re-runs this estimate exactly
        offer_exact_recount(ex, partial(prompt_estimate, summarize_rerank, body, ex.request), len(raw))
        await ex.admit(OPERATION)
        return await ex.relay(OPERATION)
