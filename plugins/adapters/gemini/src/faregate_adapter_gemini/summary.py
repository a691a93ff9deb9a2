"""Reading a native request before anything is converted: the model (from the path), the
action (from the route), the stream framing (``?alt=sse`` or the JSON array) and the body's
checked fields (:mod:`faregate_adapter_gemini.validate`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from faregate.api import InboundRequest, RequestSummary, TokenCount, bad_request
from faregate_adapter_gemini.fields import get
from faregate_adapter_gemini.names import GENERATE, STREAM_GENERATE
from faregate_adapter_gemini.validate import check_contents, check_generate

MAX_MODEL_NAME = 256
#: ``alt``: ``json`` (the default; a stream is one JSON array) or ``sse``
ALT_VALUES = frozenset({"json", "sse"})


@dataclass(slots=True)
class GeminiSummary(RequestSummary):
    """A native request's summary, with what its answer's shape depends on."""

    action: str = GENERATE
    #: a stream in Server-Sent Events (else the JSON array)
    sse: bool = True
    #: ``generationConfig.candidateCount``
    candidates: int = 1
    #: ``thinkingConfig.includeThoughts``: thought text is shown in converted answers
    include_thoughts: bool = False


def path_model(request: InboundRequest) -> str:
    """The ``{model}`` of ``/v1beta/models/{model}:{action}``."""
    model = request.path_params.get("model", "")
    if not model or len(model) > MAX_MODEL_NAME:
        raise bad_request(f"the model in the path must be a name of at most {MAX_MODEL_NAME} characters",
                          param="model")
    return model


def stream_alt(request: InboundRequest) -> bool:
    """True for ``?alt=sse``; 400 for an ``alt`` the gateway does not serve (``proto``)."""
    alt = request.query.get("alt") or "json"
    if alt not in ALT_VALUES:
        raise bad_request("alt must be json or sse", param="alt")
    return alt == "sse"


def summarize_generate(body: dict[str, Any], request: InboundRequest) -> GeminiSummary:
    action = str(request.route.options.get("action", GENERATE))
    facts = check_generate(body)
    return GeminiSummary(model=path_model(request), stream=action == STREAM_GENERATE, max_tokens=facts.max_tokens,
                         include_usage=True, prompt_tokens=facts.prompt_tokens, action=action,
                         sse=stream_alt(request), candidates=facts.candidates, answers=facts.candidates,
                         sends_output_cap=True, include_thoughts=facts.include_thoughts)


def count_tokens(body: dict[str, Any], request: InboundRequest) -> TokenCount:
    """``countTokens``: ``contents``, or a whole ``generateContentRequest`` (never both)."""
    model = path_model(request)
    inner = get(body, "generateContentRequest")
    contents = get(body, "contents")
    if inner is not None:
        if contents is not None:
            raise bad_request("contents and generateContentRequest cannot both be set", param="contents")
        if not isinstance(inner, dict):
            raise bad_request("generateContentRequest must be an object", param="generateContentRequest")
        return TokenCount(model=model, input_tokens=check_generate(inner).prompt_tokens)
    if contents is None:
        raise bad_request("contents or generateContentRequest is required", param="contents")
    return TokenCount(model=model, input_tokens=max(1, check_contents(contents)))
