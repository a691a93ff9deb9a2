"""OpenAI's JSON endpoints besides chat, relayed to channels whose provider serves them in
OpenAI's wire format: ``embeddings`` (``POST /v1/embeddings`` and new-api's ``POST
/v1/engines/{model}/embeddings``) and ``moderations`` (``POST /v1/moderations``). The
body goes upstream as the client sent it (the model renamed when the channel maps it, or
filled in from the path or the default) and the answer comes back unchanged, so every
option (``encoding_format`` float or base64, ``dimensions`` …) works as the upstream
implements it. Billed on the upstream's ``usage.prompt_tokens``, else on the gateway's
count of the input (moderation answers carry no usage): exact where a tokenizer knows the
model, else the estimate; images by OpenAI's tile rule (:mod:`.media_tokens`). A provider of another plugin
whose embeddings API has a wire format of its own (Cohere's ``/v2/embed``) serves
``embeddings`` through :class:`EmbeddingsProvider`: it builds its request from the checked
body and reads its answer into OpenAI's ``CreateEmbeddingResponse``."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol, runtime_checkable

from faregate.api import (
    AttemptFailed,
    Exchange,
    GatewayError,
    InboundRequest,
    Outcome,
    Provider,
    RequestSummary,
    UpstreamRequest,
    UpstreamTarget,
    Usage,
    bad_request,
    estimator,
    json_dumps,
    json_loads,
    offer_exact_recount,
    settle_on_prompt,
)
from faregate_adapter_openai import media_tokens

EMBEDDINGS = "embeddings"
MODERATIONS = "moderations"
#: body caps, in MiB: OpenAI takes at most 300,000 tokens of embeddings input a request (about
#: 2.4 MB as token ids); the rest is room for other vendors' larger batches
EMBEDDINGS_MAX_BODY_MB = 16.0
#: moderation inputs may carry images as data URIs (OpenAI's vision inputs: up to 20 MB an image)
MODERATIONS_MAX_BODY_MB = 32.0
#: new-api's model when a moderation request names none
DEFAULT_MODERATION_MODEL = "text-moderation-stable"
#: OpenAI's limits: 2048 inputs per request, dimensions well under this
MAX_INPUTS = 2048
MAX_DIMENSIONS = 65_536
MAX_TOKEN_ID = 2**31 - 1
ENCODINGS = ("float", "base64")
#: the list an answer of each endpoint carries (checked before it is passed on); an endpoint
#: not named here answers an opaque JSON object
ANSWER_LISTS = {EMBEDDINGS: "data", MODERATIONS: "results"}


@runtime_checkable
class JsonEndpointProvider(Protocol):
    """What a provider offers to serve these endpoints (besides declaring them in ``endpoints``)."""

    def build_json(self, endpoint: str, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest:
        """The upstream request of ``endpoint`` carrying ``raw`` (``b""``: encode ``body``)."""
        ...


@runtime_checkable
class EmbeddingsProvider(Protocol):
    """What a provider implements to serve ``embeddings`` in its own wire format (besides
    declaring the endpoint kind); structural, both methods pure."""

    def build_embeddings(self, body: dict[str, Any], target: UpstreamTarget) -> UpstreamRequest:
        """The upstream request for the checked body (``model`` the channel's name); a 400
        ``GatewayError`` for what the vendor cannot take."""
        ...

    def read_embeddings(self, body: bytes, request: dict[str, Any]) -> tuple[dict[str, Any], Usage | None]:
        """The answer to ``request`` as OpenAI's ``CreateEmbeddingResponse`` (``request``'s
        model named) and its usage; ``ValueError`` (``KeyError``, ``TypeError``) when it is
        not one."""
        ...


def _input_tokens(value: Any) -> int:
    """The estimate of ``input`` (a string, strings, token ids, or lists of token ids);
    400 naming ``input`` for anything else."""
    if isinstance(value, str):
        if not value:
            raise bad_request("input must not be empty", param="input")
        return estimator.text(value)
    if not isinstance(value, list) or not value:
        raise bad_request("input must be a string, an array of strings, or an array of token arrays",
                          param="input")
    if len(value) > MAX_INPUTS:
        raise bad_request(f"input may hold at most {MAX_INPUTS} items", param="input")
    if all(_token_id(v) for v in value):
        return len(value)
    total = 0
    for item in value:
        if isinstance(item, str) and item:
            total += estimator.text(item)
        elif isinstance(item, list) and item and all(_token_id(v) for v in item):
            total += len(item)
        else:
            raise bad_request("each input item must be a non-empty string or a non-empty array of token ids",
                              param="input")
    return total


def _token_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_ID


def summarize_embeddings(body: dict[str, Any], request: InboundRequest) -> RequestSummary:
    """Model (from the body, or the path of ``/v1/engines/{model}/embeddings``), input and
    options checked; 400 naming the field otherwise."""
    model = body.get("model") or request.path_params.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required", param="model")
    if "input" not in body:
        raise bad_request("input is required", param="input")
    tokens = _input_tokens(body["input"])
    encoding = body.get("encoding_format", "float")
    if encoding not in ENCODINGS:
        raise bad_request("encoding_format must be float or base64", param="encoding_format")
    dimensions = body.get("dimensions")
    if dimensions is not None and not (_token_id(dimensions) and 1 <= dimensions <= MAX_DIMENSIONS):
        raise bad_request(f"dimensions must be a whole number from 1 to {MAX_DIMENSIONS}", param="dimensions")
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise bad_request("user must be a string", param="user")
    return RequestSummary(model=model, stream=False, max_tokens=None, prompt_tokens=tokens)


def summarize_moderation(body: dict[str, Any], request: InboundRequest) -> RequestSummary:
    """``input`` a string, strings, or text and image parts; the model defaults to new-api's."""
    model = body.get("model", DEFAULT_MODERATION_MODEL)
    if not isinstance(model, str) or not model:
        raise bad_request("model must be a non-empty string", param="model")
    value = body.get("input")
    if isinstance(value, str) and value:
        return RequestSummary(model=model, stream=False, max_tokens=None, prompt_tokens=estimator.text(value))
    if not isinstance(value, list) or not value or len(value) > MAX_INPUTS:
        raise bad_request("input must be a string or a non-empty array of strings or content parts",
                          param="input")
    tokens = 0
    for item in value:
        if isinstance(item, str):
            tokens += estimator.text(item)
        elif isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
            tokens += estimator.text(item["text"])
        elif isinstance(item, dict) and item.get("type") == "image_url" and isinstance(item.get("image_url"), dict):
            tokens += media_tokens.image_tokens(item["image_url"])  # chat's rule: tiles from the image's header
        else:
            raise bad_request("each input item must be a string, a text part or an image_url part", param="input")
    return RequestSummary(model=model, stream=False, max_tokens=None, prompt_tokens=tokens)


def read_usage(body: bytes, endpoint: str) -> Usage | None:
    """``usage`` of the answer; :class:`AttemptFailed` when the body is not an answer of
    ``endpoint`` (a JSON object; with a list of embeddings, of moderation results)."""
    try:
        obj = json_loads(body)
    except ValueError:
        obj = None
    field = ANSWER_LISTS.get(endpoint)
    if not isinstance(obj, dict) or (field is not None and not isinstance(obj.get(field), list)):
        raise AttemptFailed(GatewayError(502, f"upstream sent a malformed {endpoint} response",
                                         code="bad_response_body", upstream=True))
    usage = obj.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("prompt_tokens")
    if not isinstance(prompt, int) or not _token_id(prompt):
        return None
    return Usage(input_tokens=prompt, output_tokens=0)


class JsonOperation:
    """One attempt of a JSON endpoint: the client's body up, the upstream's answer down."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    def serves(self, provider: Provider, channel_type: int) -> bool:
        return provider.serves(self.endpoint, channel_type) and (isinstance(provider, JsonEndpointProvider) or (
            self.endpoint == EMBEDDINGS and isinstance(provider, EmbeddingsProvider)))

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        if not isinstance(provider, JsonEndpointProvider):
            assert isinstance(provider, EmbeddingsProvider)
            return provider.build_embeddings({**ex.body, "model": target.model}, target)
        body, raw = ex.body, ex.raw
        if target.model != body.get("model"):  # the channel's mapping, the engines path, the default
            body = {**body, "model": target.model}
            raw = b""
        return provider.build_json(self.endpoint, body, raw, target)

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
        if not isinstance(provider, JsonEndpointProvider) and isinstance(provider, EmbeddingsProvider):
            try:
                answer, usage = provider.read_embeddings(body, ex.body)
            except (ValueError, TypeError, KeyError, AttributeError):  # incl. JSON errors
                raise AttemptFailed(GatewayError(502, f"upstream sent a malformed {self.endpoint} response",
                                                 code="bad_response_body", upstream=True)) from None
            body = json_dumps(answer)
        else:
            usage = read_usage(body, self.endpoint)
        if usage is None:  # none reported (moderations never do): the gateway's count of the input
            await settle_on_prompt(ex)
        else:
            ex.settle(usage, end_reason="done")
        return ex.raw_json(body)


class JsonDriver:
    """Routes of one JSON endpoint kind: authenticate, read, check, admit, relay."""

    def __init__(self, kind: str, summarize: Callable[[dict[str, Any], InboundRequest], RequestSummary]) -> None:
        self.kind = kind
        self.summarize = summarize
        self.operation = JsonOperation(kind)

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        raw, body = await ex.read_json()
        # thousands of inputs or token arrays take a while to check: a big body's, off the loop
        summary = await ex.work_on_body(raw, self.summarize, body, ex.request)
        ex.begin(summary, body, raw)
        # should the upstream report no usage, its bill re-runs this estimate exactly
        offer_exact_recount(ex, partial(prompt_estimate, self.summarize, body, ex.request), len(raw))
        await ex.admit(self.operation)
        return await ex.relay(self.operation)


def prompt_estimate(summarize: Callable[[dict[str, Any], InboundRequest], RequestSummary], body: dict[str, Any],
                    request: InboundRequest) -> int:
    """The prompt tokens ``summarize`` finds in ``body`` (re-run with the exact tokenizer in force)."""
    return summarize(body, request).prompt_tokens


def drivers() -> list[JsonDriver]:
    return [JsonDriver(EMBEDDINGS, summarize_embeddings), JsonDriver(MODERATIONS, summarize_moderation)]
