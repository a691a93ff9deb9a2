"""``POST /v1/responses/compact``: a conversation compacted by the upstream into its own
encrypted summary item (``CompactResponseMethodPublicBody`` → ``CompactResource``). Only
channels that serve it natively take it: the client's body goes up as it came (the model
renamed), the answer comes back unchanged.

As new-api does, the request's model is ``<model>-openai-compact`` for everything the
gateway decides (channels listing that name, the key's model limits, pricing, logs) and
``<model>`` upstream: the channel's model mapping applies to the base name (a mapping of the
suffixed name itself wins). Priced by ``ModelPrice`` / ``ModelRatio`` of the suffixed name
(found by new-api's matching name, as every price), else of the wildcard ``*-openai-compact``,
else as any unpriced model; billed on the
answer's usage (input and output), or, without one, on the gateway's count of the input
only (exact where a tokenizer knows the model; the compacted output is encrypted: its size
says nothing reliable of its tokens)."""

from __future__ import annotations

import time
from typing import Any

from faregate.api import (
    AttemptFailed,
    Exchange,
    GatewayError,
    JSONDecodeError,
    Outcome,
    Price,
    Provider,
    RequestSummary,
    Services,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamTarget,
    Usage,
    bad_request,
    estimator,
    json_loads,
    map_model,
    matching_name,
    offer_exact_recount,
    settle_on_prompt,
)
from faregate_adapter_openai.endpoints import JsonEndpointProvider
from faregate_adapter_openai.responses_api.render import parse_usage
from faregate_adapter_openai.responses_api.summary import TYPES, read_input

COMPACT = "responses_compact"
SUFFIX = "-openai-compact"
WILDCARD = "*" + SUFFIX
#: the fields of a compaction request (besides ``model``) and their JSON types
FIELDS = ("input", "instructions", "previous_response_id", "prompt_cache_key", "prompt_cache_retention",
          "service_tier")


def summarize_compact(body: dict[str, Any]) -> RequestSummary:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required", param="model")
    for name in FIELDS:
        value = body.get(name)
        if value is not None and not isinstance(value, TYPES[name]):
            raise bad_request(f"Invalid type for '{name}'", code="invalid_type", param=name)
    if body.get("stream") not in (None, False):
        raise bad_request("compaction does not stream", param="stream")
    value = body.get("input")
    if not value and body.get("previous_response_id") is None:
        raise bad_request("input (or previous_response_id) is required", param="input")
    tokens = read_input(value)[0] if value else 0
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        tokens += estimator.text(instructions)
    compact_model = model if model.endswith(SUFFIX) else model + SUFFIX
    return RequestSummary(model=compact_model, stream=False, prompt_tokens=max(1, tokens))


def upstream_model(ex: Exchange) -> str:
    """The model the upstream is asked for: a mapping (or rewrite) of the suffixed name as
    it is, else the base name through the channel's model mapping."""
    if ex.upstream_model and ex.upstream_model != ex.model:
        return ex.upstream_model.removesuffix(SUFFIX)
    base = ex.model.removesuffix(SUFFIX)
    return map_model(ex.channel.model_mapping, base) if ex.channel is not None else base


class CompactOperation:
    """One compaction attempt, on a channel that serves it."""

    endpoint = COMPACT

    def serves(self, provider: Provider, channel_type: int) -> bool:
        return provider.serves(COMPACT, channel_type) and isinstance(provider, JsonEndpointProvider)

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        assert isinstance(provider, JsonEndpointProvider)
        target.model = ex.upstream_model = upstream_model(ex)
        body: dict[str, Any] = ex.body
        raw = ex.raw
        if target.model != body.get("model"):
            body, raw = {**body, "model": target.model}, b""
        return provider.build_json(COMPACT, body, raw, target)

    async def finish(self, ex: Exchange, provider: Provider, resp: UpstreamResponse, passthrough: bool) -> Outcome:
        try:
            body = await resp.aread()
        except Exception:  # noqa: BLE001 - the transport's own error types
            raise AttemptFailed(GatewayError(502, "upstream closed the connection mid-response",
                                             code="read_response_body_failed", upstream=True)) from None
        finally:
            await resp.aclose()
        ex.upstream_seconds += time.perf_counter() - ex.answer_at
        ex.answer_at = 0.0
        try:
            obj = json_loads(body)
        except JSONDecodeError:
            obj = None
        if not isinstance(obj, dict) or not isinstance(obj.get("output"), list):
            raise AttemptFailed(GatewayError(502, "upstream sent a malformed compaction response",
                                             code="bad_response_body", upstream=True))
        usage = parse_usage(obj.get("usage"))
        if usage is None or usage.total_tokens == 0:
            await settle_on_prompt(ex)
        else:
            ex.settle(usage, end_reason="done")
        return ex.raw_json(body)


class CompactDriver:
    """Routes of kind ``responses_compact``."""

    kind = COMPACT
    operation = CompactOperation()

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        raw, body = await ex.read_json()
        # a long conversation takes a while to check and estimate: a big body's, off the loop
        summary = await ex.work_on_body(raw, summarize_compact, body)
        ex.begin(summary, body, raw)
        # should the upstream report no usage, its bill re-runs this estimate exactly
        offer_exact_recount(ex, lambda: summarize_compact(body).prompt_tokens, len(raw))
        try:
            await ex.admit(self.operation)
        except GatewayError as err:
            if err.code == "model_not_found":  # say what new-api's channels list for compaction
                err.message += f"; compaction routes to channels that list `{ex.model}`"
            raise
        return await ex.relay(self.operation)


class CompactPricer:
    """new-api's compaction prices: the suffixed model's own ``ModelPrice`` / ``ModelRatio``
    (left to the default pricer), else the ``*-openai-compact`` wildcard's."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def price(self, ex: Exchange, usage: Usage | None) -> Price | None:
        model = ex.model
        if not model.endswith(SUFFIX):
            return None
        options = self.services.options
        assert ex.principal is not None
        group_ratio = float(options.group_ratio_for(ex.principal.user.group, ex.principal.group))
        # the model's own price or ratio, found as the default pricer finds it (new-api's matching
        # name); the wildcard stands in only for a name that stays a compaction's once matched (a
        # custom GPT's or a thinking budget's compaction is priced as its family, as new-api)
        if options.price_of(model) is not None or not matching_name(model).endswith(SUFFIX):
            return None
        if WILDCARD in options.model_price:
            return Price(model_price=float(options.model_price[WILDCARD]), group_ratio=group_ratio,
                         quota_per_unit=options.quota_per_unit)
        if options.ratio_of(model) is not None or WILDCARD not in options.model_ratio:
            return None
        return Price(model_ratio=float(options.model_ratio[WILDCARD]),
                     completion_ratio=float(options.completion_ratio.get(model, options.completion_ratio.get(
                         WILDCARD, 1.0))),
                     cache_ratio=float(options.cache_ratio.get(model, options.cache_ratio.get(WILDCARD, 1.0))),
                     cache_write_ratio=float(options.create_cache_ratio_of(model)),
                     group_ratio=group_ratio, quota_per_unit=options.quota_per_unit)
