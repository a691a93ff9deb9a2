"""The ``embeddings`` endpoint kind: ``POST /v1/embeddings`` and new-api's
``POST /v1/engines/{model}/embeddings``, relayed to channels whose provider serves
embeddings in OpenAI's wire format. The body goes upstream as the client sent it (the
model renamed when the channel maps it) and the answer comes back unchanged, so both
``encoding_format`` values (the SDKs ask for ``base64``) and ``dimensions`` work as the
upstream implements them. Billed on the upstream's ``usage.prompt_tokens``."""

from __future__ import annotations

import time
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
    json_loads,
)

KIND = "embeddings"
#: OpenAI's limits: 2048 inputs per request, dimensions well under this
MAX_INPUTS = 2048
MAX_DIMENSIONS = 65_536
MAX_TOKEN_ID = 2**31 - 1
ENCODINGS = ("float", "base64")


@runtime_checkable
class EmbeddingsProvider(Protocol):
    """What a provider offers to serve ``embeddings`` (besides declaring it in ``endpoints``)."""

    def build_embeddings(self, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest: ...


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


def summarize(body: dict[str, Any], request: InboundRequest) -> RequestSummary:
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


def read_usage(body: bytes) -> Usage | None:
    """``usage`` of an embeddings list; :class:`AttemptFailed` when the body is not one."""
    try:
        obj = json_loads(body)
    except ValueError:
        obj = None
    if not isinstance(obj, dict) or not isinstance(obj.get("data"), list):
        raise AttemptFailed(GatewayError(502, "upstream sent a malformed embeddings response",
                                         code="bad_response_body", upstream=True))
    usage = obj.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("prompt_tokens")
    if not isinstance(prompt, int) or not _token_id(prompt):
        return None
    return Usage(input_tokens=prompt, output_tokens=0)


class EmbeddingsOperation:
    endpoint = KIND

    def serves(self, provider: Provider) -> bool:
        return KIND in provider.endpoints and isinstance(provider, EmbeddingsProvider)

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        assert isinstance(provider, EmbeddingsProvider)
        body, raw = ex.body, ex.raw
        if target.model != body.get("model"):  # the channel's model mapping, or the engines path
            body = {**body, "model": target.model}
            raw = b""
        return provider.build_embeddings(body, raw, target)

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
        usage = read_usage(body)
        ex.settle(usage, end_reason="done")  # no usage: the input estimate is billed
        return ex.raw_json(body)


EMBEDDINGS = EmbeddingsOperation()


class EmbeddingsDriver:
    """Routes of kind ``embeddings``: authenticate, read, check, admit, relay."""

    kind = KIND

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        raw, body = await ex.read_json()
        ex.begin(summarize(body, ex.request), body, raw)
        await ex.admit()
        return await ex.relay(EMBEDDINGS)
