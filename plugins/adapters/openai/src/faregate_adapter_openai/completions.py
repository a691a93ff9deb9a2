"""OpenAI's legacy text completions (``POST /v1/completions``), relayed to channels whose
provider speaks OpenAI's wire format and serves the ``completions`` endpoint kind (OpenAI,
Custom and the other generic OpenAI-compatible types; DeepSeek at its FIM beta path).

The request is checked field by field against OpenAI's ``CreateCompletionRequest`` (a bad
value is a 400 naming the field, never forwarded), then passed through as chat is: the
client's bytes unchanged but for the channel's model mapping and, when streaming,
``stream_options.include_usage`` forced on so the final usage chunk bills the stream (the
chunk is dropped again when the client did not ask for it). There is no canonical
conversion: a text completion has no meaning to a messages-only vendor, whose channels
are never chosen (400 ``endpoint_not_supported`` when no other serves the model). Bodies
over :data:`faregate_adapter_openai.format.COMPLETIONS_MAX_BODY_MB` are refused before they are read.

Regular answers are billed on ``usage``, streams on the usage chunk; without one, on the
gateway's count of the prompt and of the text returned (logged as estimated): exact where a
tokenizer knows the model (a regular answer's text too; a stream's from its characters),
else the estimator's rule."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from faregate.api import (
    INT64_MAX,
    INT64_MIN,
    MAX_OUTPUT_TOKENS,
    AttemptFailed,
    Exchange,
    GatewayError,
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
    prepare_exact_recount,
    stream_outcome,
)
from faregate_adapter_openai import responses
from faregate_adapter_openai.provider import OpenAICompatibleProvider

COMPLETIONS = "completions"
#: the output bound per choice of a request that sets none (OpenAI's default ``max_tokens``)
DEFAULT_MAX_TOKENS = 16
#: prompts in one request (a list of strings or of token arrays); OpenAI batches this many
MAX_PROMPTS = 2048
MAX_TOKEN_ID = 2**31 - 1
#: at most this many strings in ``stop`` (OpenAI's limit)
MAX_STOP = 4
#: entries of ``logit_bias`` (token id → bias from -100 to 100)
MAX_LOGIT_BIAS = 1024
#: the numeric fields of a completion request and their ranges (OpenAI's API reference)
NUMBERS = {
    "max_tokens": NumberBound(0, MAX_OUTPUT_TOKENS, integer=True),
    "temperature": NumberBound(0, 2),
    "top_p": NumberBound(0, 1),
    "n": NumberBound(1, 128, integer=True),
    "best_of": NumberBound(0, 20, integer=True),
    "logprobs": NumberBound(0, 5, integer=True),
    "presence_penalty": NumberBound(-2, 2),
    "frequency_penalty": NumberBound(-2, 2),
    "seed": NumberBound(INT64_MIN, INT64_MAX, integer=True),
}


def _token_ids(value: list[Any]) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_TOKEN_ID for v in value)


def prompt_tokens(prompt: Any) -> int:
    """The estimate of ``prompt``: a string, strings, token ids, or arrays of token ids (a
    token array counts as its length); 400 naming ``prompt`` for anything else."""
    if isinstance(prompt, str):
        if not prompt:  # new-api: "field prompt is required"
            raise bad_request("prompt must not be empty", param="prompt")
        return estimator.text(prompt)
    if not isinstance(prompt, list) or not prompt:
        raise bad_request("prompt is required: a string, an array of strings, an array of token ids or an "
                          "array of token arrays", param="prompt")
    if _token_ids(prompt):
        return len(prompt)
    if len(prompt) > MAX_PROMPTS:
        raise bad_request(f"prompt may hold at most {MAX_PROMPTS} prompts", param="prompt")
    if all(isinstance(p, str) for p in prompt):
        return sum(estimator.text(p) for p in prompt)
    if all(isinstance(p, list) and p and _token_ids(p) for p in prompt):
        return sum(len(p) for p in prompt)
    raise bad_request("prompt must be a string, an array of strings, an array of token ids or an array of "
                      "non-empty token arrays (not a mix)", param="prompt")


def _prompt_count(prompt: Any) -> int:
    """How many prompts are completed (each gets ``n`` choices)."""
    if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int):
        return len(prompt)
    return 1


def _check_options(body: dict[str, Any]) -> None:
    """The non-numeric fields: types and OpenAI's documented limits."""
    for name in ("echo", "stream"):
        if body.get(name) is not None and not isinstance(body[name], bool):
            raise bad_request(f"{name} must be a boolean", param=name)
    for name in ("suffix", "user"):
        if body.get(name) is not None and not isinstance(body[name], str):
            raise bad_request(f"{name} must be a string", param=name)
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str) and not (
            isinstance(stop, list) and 1 <= len(stop) <= MAX_STOP and all(isinstance(s, str) for s in stop)):
        raise bad_request(f"stop must be a string or an array of 1 to {MAX_STOP} strings", param="stop")
    bias = body.get("logit_bias")
    if bias is not None:
        if not isinstance(bias, dict) or len(bias) > MAX_LOGIT_BIAS:
            raise bad_request(f"logit_bias must be an object of at most {MAX_LOGIT_BIAS} token ids", param="logit_bias")
        for token, value in bias.items():
            if not (token.isdigit() and isinstance(value, int) and not isinstance(value, bool)
                    and -100 <= value <= 100):
                raise bad_request("logit_bias maps token ids to whole numbers from -100 to 100", param="logit_bias")
    options = body.get("stream_options")
    if options is not None:
        if not isinstance(options, dict) or any(
                not isinstance(options[k], bool) for k in ("include_usage", "include_obfuscation") if k in options):
            raise bad_request("stream_options must be an object of booleans (include_usage, include_obfuscation)",
                              param="stream_options")
        if body.get("stream") is not True:
            raise bad_request("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                              param="stream_options")


def summarize_completion(body: dict[str, Any]) -> RequestSummary:
    """Model, prompt and every option checked; the reservation sized for all choices."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required", param="model")
    tokens = prompt_tokens(body.get("prompt"))
    check_numbers(body, NUMBERS)
    _check_options(body)
    stream = body.get("stream") is True
    n = body.get("n") or 1
    best_of = body.get("best_of")
    if best_of is not None and best_of < n:
        raise bad_request("best_of must be greater than or equal to n", param="best_of")
    if stream and best_of is not None and best_of > 1:
        raise bad_request("best_of cannot be streamed: leave it at 1 or do not stream", param="best_of")
    suffix = body.get("suffix")
    if suffix:
        tokens += estimator.text(suffix)
    max_tokens = body.get("max_tokens")
    answers = max(n, best_of or 1) * _prompt_count(body["prompt"])  # each may use the whole bound
    budget = None
    if max_tokens is not None:  # 0: echo's logprobs, nothing new
        budget = min(MAX_OUTPUT_TOKENS, max(1, max_tokens * answers))
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    # without a bound OpenAI writes 16 tokens: reserved, and sent to vendors whose default differs
    return RequestSummary(model=model, stream=stream, max_tokens=budget, include_usage=include_usage,
                          prompt_tokens=tokens, answers=answers, sends_output_cap=True,
                          output_cap=None if max_tokens is not None else DEFAULT_MAX_TOKENS)


def _echoed(body: dict[str, Any], index: Any) -> int:
    """Characters of choice ``index``'s text that repeat its prompt (``echo``): not output."""
    if body.get("echo") is not True or not isinstance(index, int):
        return 0
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
        n = body.get("n") or 1
        prompt = prompt[index // n] if 0 <= index // n < len(prompt) else ""
    return len(prompt) if isinstance(prompt, str) else 0


def read_completion(body: bytes, request: dict[str, Any]) -> tuple[Usage | None, list[str]]:
    """``usage`` of a ``text_completion`` answer, and the new text of each choice (the echoed
    prompt left out: counted for the bill when it reports no usage); :class:`AttemptFailed`
    when it is not one."""
    try:
        obj = json_loads(body)
        choices = obj["choices"]
        if not isinstance(choices, list):
            raise TypeError("choices")
        usage = responses.parse_usage(obj.get("usage"))
        texts: list[str] = []
        for choice in choices:
            text = choice.get("text")
            if isinstance(text, str):
                texts.append(text[_echoed(request, choice.get("index")):])
    except (ValueError, TypeError, KeyError, AttributeError):  # incl. JSON errors
        raise AttemptFailed(GatewayError(502, "upstream sent a malformed completion", code="bad_response_body",
                                         upstream=True)) from None
    return usage, texts


class CompletionsOperation:
    """One attempt: the client's body up (as chat passes it through), the answer down."""

    endpoint = COMPLETIONS

    def serves(self, provider: Provider, channel_type: int) -> bool:
        return provider.serves(COMPLETIONS, channel_type) and isinstance(provider, OpenAICompatibleProvider)

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        # always the client's body: there is no other form of a text completion to convert to
        assert isinstance(provider, OpenAICompatibleProvider) and ex.summary is not None
        body, raw = ex.body, ex.raw
        if ex.summary.output_cap is not None:  # no max_tokens: the bound reserved for it goes up
            body, raw = {**body, "max_tokens": ex.summary.output_cap}, b""
        changed = provider.passthrough_body(body, target, ex.summary)
        if changed is None:  # raw b"": build_json encodes the body
            return provider.build_json(COMPLETIONS, body, raw, target)
        return provider.build_json(COMPLETIONS, changed, b"", target)

    async def finish(self, ex: Exchange, provider: Provider, resp: Any, passthrough: bool) -> Outcome:
        assert ex.summary is not None
        if ex.summary.stream:  # OpenAI's chunks, forwarded as chat's are (usage read on the side)
            return await stream_outcome(ex, provider, resp, True)
        try:
            body = await resp.aread()
        except Exception:  # noqa: BLE001 - the transport's own error types
            raise AttemptFailed(GatewayError(502, "upstream closed the connection mid-response",
                                             code="read_response_body_failed", upstream=True)) from None
        finally:
            await resp.aclose()
        ex.upstream_seconds += time.perf_counter() - ex.answer_at
        ex.answer_at = 0.0
        usage, texts = read_completion(body, ex.body)
        chars = sum(len(text) for text in texts)
        if usage is None and chars:  # billed on the gateway's count: exact where a tokenizer knows the model
            await prepare_exact_recount(ex, texts)
        ex.settle(usage, end_reason="done", output_chars=chars)  # no usage: estimated from what was seen
        return ex.raw_json(body)


OPERATION = CompletionsOperation()


class CompletionsDriver:
    """``POST /v1/completions``: authenticate, read, check, admit, relay."""

    kind = COMPLETIONS

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        raw, body = await ex.read_json()
        # a long token-array prompt takes a while to check: a big body's, off the loop
        summary = await ex.work_on_body(raw, summarize_completion, body)
        ex.begin(summary, body, raw)
        # should the upstream report no usage, its bill re-runs this estimate exactly
        offer_exact_recount(ex, partial(prompt_estimate, body), len(raw))
        await ex.admit(OPERATION)
        return await ex.relay(OPERATION)


def prompt_estimate(body: dict[str, Any]) -> int:
    """The prompt (and suffix) tokens of a checked request (re-run with the exact tokenizer in force)."""
    return summarize_completion(body).prompt_tokens
