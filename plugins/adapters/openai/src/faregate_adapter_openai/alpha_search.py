"""``POST /v1/alpha/search``: Codex's standalone web search, relayed only to channels whose
type declares it (new-api serves it from its Codex channels; here the ``codex`` channel
type, and any third party's provider that declares ``alpha_search``): elsewhere the model
gets a 400 ``endpoint_not_supported`` naming the endpoint. The protocol is young and
evolving, so the body goes upstream as the client sent it (only the model renamed when
the channel maps it) and the answer comes back unchanged. The answer carries no usage:
billed at the model's fixed price per call (``ModelPrice``) when it has one, else on the
estimate of the request's tokens (logged as estimated)."""

from __future__ import annotations

from typing import Any

from faregate.api import InboundRequest, RequestSummary, bad_request, check_numbers, estimator, json_dumps_str
from faregate.api import NumberBound as Bound
from faregate_adapter_openai.codex import ALPHA_SEARCH
from faregate_adapter_openai.endpoints import JsonDriver

__all__ = ["ALPHA_SEARCH", "driver", "summarize_alpha_search"]

MAX_OUTPUT = 1_000_000
NUMBERS = {"max_output_tokens": Bound(1, MAX_OUTPUT, integer=True)}


def summarize_alpha_search(body: dict[str, Any], request: InboundRequest) -> RequestSummary:
    """``model`` a non-empty string, ``id`` a string, ``stream`` false or absent (the
    endpoint answers one JSON object), ``max_output_tokens`` bounded."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required", param="model")
    if "id" in body and not isinstance(body["id"], str):
        raise bad_request("id must be a string", param="id")
    if body.get("stream") not in (None, False):
        raise bad_request("alpha search does not stream", param="stream")
    check_numbers(body, NUMBERS)
    return RequestSummary(model=model, stream=False, max_tokens=None,
                          prompt_tokens=estimator.text(json_dumps_str(body)))


def driver() -> JsonDriver:
    return JsonDriver(ALPHA_SEARCH, summarize_alpha_search)
