"""The inbound format ``anthropic.messages``: what Anthropic SDK clients (and Claude
Code) speak, including ``POST /v1/messages/count_tokens``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from faregate.api import (
    MAX_OUTPUT_TOKENS,
    ChatRequest,
    ChatResponse,
    GatewayError,
    InboundFormat,
    InboundRequest,
    ModelInfo,
    NumberBound,
    RateLimitInfo,
    RequestSummary,
    Route,
    StreamEncoder,
    TokenCount,
    bad_request,
    check_numbers,
    estimator,
    json_dumps,
)
from faregate_adapter_anthropic import errors, requests, responses, streams

FORMAT_NAME = "anthropic.messages"
# headers that mark a request as Anthropic's; ``vendor-version`` is the neutral alias
VERSION_HEADERS = ("anthropic-version", "vendor-version")
# GET /v1/models paging (Anthropic's Models API: limit 1..1000, default 20)
MODELS_DEFAULT_LIMIT = 20
MODELS_MAX_LIMIT = 1000


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return estimator.text(content)
    total = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                total += estimator.text(str(block.get("text", "")))
            elif kind == "image":
                total += estimator.IMAGE_TOKENS
            elif kind == "tool_use":
                total += estimator.text(str(block.get("name", ""))) + estimator.json(block.get("input") or {})
            elif kind == "tool_result":
                total += _content_tokens(block.get("content")) + estimator.MESSAGE_OVERHEAD
            elif kind == "thinking":
                total += estimator.text(str(block.get("thinking", "")))
            elif kind == "document":
                total += estimator.json(block.get("source") or {})
    return total


#: the numeric fields of a Messages request and their ranges (Anthropic's API reference)
NUMBERS = {
    "temperature": NumberBound(0, 1),
    "top_p": NumberBound(0, 1),
    "top_k": NumberBound(0, 2**31 - 1, integer=True),
}


def input_tokens(body: dict[str, Any]) -> int:
    """The shared estimate of a Messages request's input: system, messages, tools."""
    total = _content_tokens(body.get("system"))
    for msg in body.get("messages") or []:
        if isinstance(msg, dict):
            total += estimator.MESSAGE_OVERHEAD + _content_tokens(msg.get("content"))
    tools = body.get("tools")
    if isinstance(tools, list):
        total += estimator.tools(tools)
    return max(1, total)


def rfc3339(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class AnthropicMessagesFormat(InboundFormat):
    name = FORMAT_NAME
    #: an unknown path here (``/v1/messages/batches``) is answered in Anthropic's error shape
    path_prefixes = ("/v1/messages",)

    def routes(self) -> list[Route]:
        return [Route("POST", "/v1/messages"), Route("POST", "/v1/messages/count_tokens", kind="count_tokens")]

    def api_key(self, request: InboundRequest) -> str | None:
        key = request.headers.get("x-api-key")
        if key:
            return key.strip()
        return super().api_key(request)

    def summarize(self, body: dict[str, Any], request: InboundRequest) -> RequestSummary:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise bad_request("model: Field required", param="model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise bad_request("messages: at least one message is required", param="messages")
        max_tokens = body.get("max_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or not 1 <= max_tokens <= MAX_OUTPUT_TOKENS:
            raise bad_request(f"max_tokens: Field required (an integer from 1 to {MAX_OUTPUT_TOKENS})",
                              param="max_tokens")
        check_numbers(body, NUMBERS)
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise bad_request("stream: Input should be a valid boolean", param="stream")
        # a Messages stream always carries usage (message_start / message_delta)
        return RequestSummary(model=model, stream=stream, max_tokens=max_tokens, include_usage=True,
                              prompt_tokens=input_tokens(body), sends_output_cap=True)

    def parse(self, body: dict[str, Any], summary: RequestSummary) -> ChatRequest:
        request = requests.parse_request(body)
        request.model = summary.model
        return request

    def render_response(self, response: ChatResponse, requested_model: str) -> dict[str, Any]:
        return responses.render_response(response, requested_model)

    def stream_encoder(self, summary: RequestSummary, request_id: str) -> StreamEncoder:
        return streams.AnthropicStreamEncoder(summary.model, request_id)

    def add_system_prompt(self, body: dict[str, Any], prompt: str,
                          override: bool) -> tuple[dict[str, Any], bool] | None:
        """Anthropic's ``system``: a string, or text blocks (the channel's goes first)."""
        own = body.get("system")
        if not own:
            return {**body, "system": prompt}, False
        if not override:
            return None
        if isinstance(own, list):
            return {**body, "system": [{"type": "text", "text": prompt}, *own]}, True
        return {**body, "system": f"{prompt}\n{own}"}, True

    def add_output_cap(self, body: dict[str, Any], tokens: int) -> dict[str, Any] | None:
        """``max_tokens`` (required of Anthropic's clients: a request always sets its own)."""
        return {**body, "max_tokens": tokens}

    def rate_limit_headers(self, limit: RateLimitInfo) -> dict[str, str]:
        """Anthropic's ``anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}``, the
        reset as an RFC 3339 time (what its SDK and clients read)."""
        now = datetime.now(UTC)
        headers: dict[str, str] = {}
        for kind, total, left, reset in (("requests", limit.requests_limit, limit.requests_remaining,
                                          limit.requests_reset),
                                         ("tokens", limit.tokens_limit, limit.tokens_remaining, limit.tokens_reset)):
            if total is None:
                continue
            at = datetime.fromtimestamp(now.timestamp() + (reset or 0.0), UTC).replace(microsecond=0)
            headers[f"anthropic-ratelimit-{kind}-limit"] = str(total)
            headers[f"anthropic-ratelimit-{kind}-remaining"] = str(max(0, left or 0))
            headers[f"anthropic-ratelimit-{kind}-reset"] = at.isoformat().replace("+00:00", "Z")
        return headers

    def render_error(self, err: GatewayError, request_id: str) -> tuple[int, bytes]:
        status, payload = errors.error_payload(err)
        payload["request_id"] = request_id
        return status, json_dumps(payload)

    # token counting --------------------------------------------------------------------
    def count_tokens(self, body: dict[str, Any], request: InboundRequest) -> TokenCount:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise bad_request("model: Field required", param="model")
        if not isinstance(body.get("messages"), list):
            raise bad_request("messages: Field required", param="messages")
        return TokenCount(model=model, input_tokens=input_tokens(body))

    # model lists -----------------------------------------------------------------------
    def claims_model_list(self, request: InboundRequest) -> bool:
        return any(request.headers.get(name) for name in VERSION_HEADERS)

    def render_model_list(self, models: list[ModelInfo], request: InboundRequest) -> dict[str, Any]:
        """One page of Anthropic's cursor paging (``limit``, ``after_id``, ``before_id``)."""
        page, has_more = page_models(models, request.query)
        data = [self.render_model(m) for m in page]
        return {"data": data, "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None, "has_more": has_more}

    def render_model(self, model: ModelInfo) -> dict[str, Any]:
        # the token limits and capabilities of a model behind the gateway are not known
        # (its channel may be any vendor): null, as the spec allows. ``lifecycle`` is
        # required by recent SDKs' strict validation.
        return {"type": "model", "id": model.id, "display_name": model.id, "created_at": rfc3339(model.created),
                "max_input_tokens": None, "max_tokens": None, "capabilities": None, "lifecycle": "active"}


def _limit(query: Mapping[str, str]) -> int:
    raw = query.get("limit")
    if raw is None or raw == "":
        return MODELS_DEFAULT_LIMIT
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MODELS_MAX_LIMIT:
        raise bad_request(f"limit: Input should be an integer from 1 to {MODELS_MAX_LIMIT}", param="limit")
    return limit


def page_models(models: list[ModelInfo], query: Mapping[str, str]) -> tuple[list[ModelInfo], bool]:
    """``(page, has_more)``: ``after_id`` pages forward from a model, ``before_id``
    backward (the ``limit`` models just before it), neither the first page. A cursor
    naming no listed model (the list changed) gives an empty last page."""
    limit = _limit(query)
    after, before = query.get("after_id"), query.get("before_id")
    if after and before:
        raise bad_request("after_id and before_id cannot both be set", param="before_id")
    ids = [m.id for m in models]
    if before:
        if before not in ids:
            return [], False
        end = ids.index(before)
        start = max(0, end - limit)
        return models[start:end], start > 0
    start = 0
    if after:
        if after not in ids:
            return [], False
        start = ids.index(after) + 1
    return models[start:start + limit], start + limit < len(models)
