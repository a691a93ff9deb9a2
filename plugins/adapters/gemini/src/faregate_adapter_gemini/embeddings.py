"""The ``gemini_embeddings`` endpoint kind: ``embedContent`` and ``batchEmbedContents``
(what the google-genai SDK's ``embed_content`` calls), relayed to channels whose provider
serves them in Gemini's wire format. The body goes upstream as the client sent it (each
request's ``model`` renamed when the channel maps the model) and the answer comes back
unchanged; billed on the upstream's ``usageMetadata.promptTokenCount``, else on the
gateway's count of the input: exact where a tokenizer plugin counts the model (the tiktoken
plugin counts OpenAI's models only, so a Gemini model keeps the four-characters rule unless
another plugin counts it), as the OpenAI plugin's embeddings. A channel that serves OpenAI's
``embeddings`` instead (an OpenAI-type channel) gets the request converted to
``POST /v1/embeddings`` and its answer converted back (:mod:`.openai_embeddings`)."""

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
    UpstreamRequest,
    UpstreamTarget,
    Usage,
    bad_request,
    json_dumps,
    json_loads,
    offer_exact_recount,
    settle_on_prompt,
)
from faregate_adapter_gemini.fields import get
from faregate_adapter_gemini.names import BATCH_EMBED, EMBED, EMBED_KIND
from faregate_adapter_gemini.openai_embeddings import (
    OPENAI_EMBEDDINGS,
    OpenAIJsonProvider,
    gemini_answer,
    openai_request,
)
from faregate_adapter_gemini.summary import GeminiSummary, path_model
from faregate_adapter_gemini.validate import bounded, check_content, typed

#: requests in one batch (the SDK sends one per content given)
MAX_BATCH = 2048
NUMBERS = {"outputDimensionality": NumberBound(1, 65_536, integer=True)}


@runtime_checkable
class EmbedProvider(Protocol):
    """What a provider offers to serve these actions (besides declaring the kind in ``endpoints``)."""

    def build_embed(self, action: str, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest:
        """The upstream request of ``action`` carrying ``raw`` (``b""``: encode ``body``)."""
        ...


def _embed_request(obj: Any, where: str, model: str) -> int:
    if not isinstance(obj, dict):
        raise bad_request(f"{where or 'body'} must be an object", param=where.rstrip(".") or None)
    name = get(obj, "model")
    if name is not None and name not in (model, f"models/{model}"):
        raise bad_request(f"{where}model must be models/{model}, the model of the path", param=f"{where}model")
    if get(obj, "content") is None:
        raise bad_request(f"{where}content is required", param=f"{where}content")
    tokens = check_content(get(obj, "content"), f"{where}content", system=True)
    typed(obj, "taskType", str, where)
    typed(obj, "title", str, where)
    bounded(obj, NUMBERS, where)
    config = typed(obj, "embedContentConfig", dict, where)
    if config is not None:
        bounded(config, NUMBERS, f"{where}embedContentConfig.")
    return tokens


def summarize_embed(body: dict[str, Any], request: InboundRequest) -> GeminiSummary:
    model = path_model(request)
    action = str(request.route.options.get("action", EMBED))
    if action == EMBED:
        tokens = _embed_request(body, "", model)
    else:
        requests = get(body, "requests")
        if not isinstance(requests, list) or not requests or len(requests) > MAX_BATCH:
            raise bad_request(f"requests must be an array of 1 to {MAX_BATCH} embed requests", param="requests")
        tokens = sum(_embed_request(r, f"requests[{i}].", model) for i, r in enumerate(requests))
    return GeminiSummary(model=model, stream=False, prompt_tokens=max(1, tokens), action=action)


def _renamed(body: dict[str, Any], action: str, model: str) -> dict[str, Any]:
    """``body`` for a channel that maps the model: each request names the upstream's."""
    name = f"models/{model}"
    if action == BATCH_EMBED:
        return {**body, "requests": [{**r, "model": name} for r in body["requests"]]}
    return {**body, "model": name} if "model" in body else body


def read_usage(body: bytes, action: str) -> Usage | None:
    """``usageMetadata.promptTokenCount`` of an answer; :class:`AttemptFailed` when the
    body is no embedding answer (an ``embedding`` object, or a list of ``embeddings``)."""
    try:
        obj = json_loads(body)
    except ValueError:
        obj = None
    ok = isinstance(obj, dict) and (isinstance(obj.get("embeddings"), list) if action == BATCH_EMBED
                                    else isinstance(obj.get("embedding"), dict))
    if not ok:
        raise AttemptFailed(GatewayError(502, f"upstream sent a malformed {action} response",
                                         code="bad_response_body", upstream=True))
    assert isinstance(obj, dict)
    usage = obj.get("usageMetadata")
    prompt = usage.get("promptTokenCount") if isinstance(usage, dict) else None
    if not isinstance(prompt, int) or isinstance(prompt, bool) or prompt <= 0:
        return None
    return Usage(input_tokens=prompt)


class EmbedOperation:
    """One attempt: the client's body up, the upstream's answer down (converted from and to
    OpenAI's embeddings on a channel that serves those)."""

    endpoint = EMBED_KIND

    def serves(self, provider: Provider, channel_type: int) -> bool:
        if provider.serves(EMBED_KIND, channel_type) and isinstance(provider, EmbedProvider):
            return True
        return provider.serves(OPENAI_EMBEDDINGS, channel_type) and isinstance(provider, OpenAIJsonProvider)

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        assert isinstance(ex.summary, GeminiSummary)
        if not isinstance(provider, EmbedProvider):
            assert isinstance(provider, OpenAIJsonProvider)
            body = openai_request(ex.body, ex.summary.action, target.model)
            return provider.build_json(OPENAI_EMBEDDINGS, body, b"", target)
        body, raw, action = ex.body, ex.raw, ex.summary.action
        if target.model != ex.summary.model:
            body, raw = _renamed(body, action, target.model), b""
        return provider.build_embed(action, body, raw, target)

    async def finish(self, ex: Exchange, provider: Provider, resp: Any, passthrough: bool) -> Outcome:
        assert isinstance(ex.summary, GeminiSummary)
        try:
            body = await resp.aread()
        except Exception:  # noqa: BLE001 - the transport's own error types
            raise AttemptFailed(GatewayError(502, "upstream closed the connection mid-response",
                                             code="read_response_body_failed", upstream=True)) from None
        finally:
            await resp.aclose()
        ex.upstream_seconds += time.perf_counter() - ex.answer_at
        ex.answer_at = 0.0
        if not isinstance(provider, EmbedProvider):  # OpenAI's answer, as the Gemini action's
            try:
                answer, usage = gemini_answer(json_loads(body), ex.summary.action)
            except (ValueError, TypeError, KeyError, AttributeError):  # incl. JSON errors
                raise AttemptFailed(GatewayError(502, "upstream sent a malformed embeddings response",
                                                 code="bad_response_body", upstream=True)) from None
            body = json_dumps(answer)
        else:
            usage = read_usage(body, ex.summary.action)
        if usage is None:  # none reported: the gateway's count of the input, exact where it can be
            await settle_on_prompt(ex)
        else:
            ex.settle(usage, end_reason="done")
        return ex.raw_json(body)


class EmbedDriver:
    """Routes of the kind: authenticate, read, check, admit, relay."""

    kind = EMBED_KIND
    operation = EmbedOperation()

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        raw, body = await ex.read_json()
        summary = await ex.work_on_body(raw, summarize_embed, body, ex.request)  # megabytes: off the loop
        ex.begin(summary, body, raw)
        # should the upstream report no usage, its bill re-runs this estimate exactly
        offer_exact_recount(ex, partial(prompt_estimate, body, ex.request), len(raw))
        await ex.admit(self.operation)
        return await ex.relay(self.operation)


def prompt_estimate(body: dict[str, Any], request: InboundRequest) -> int:
    """The input tokens of a checked request (re-run with the exact tokenizer in force)."""
    return summarize_embed(body, request).prompt_tokens
