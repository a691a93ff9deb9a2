"""The inbound format ``anthropic.messages``: what Anthropic SDK clients (and Claude
Code) speak, including ``POST /v1/messages/count_tokens``."""

from __future__ import annotations

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
                              prompt_tokens=input_tokens(body))

    def parse(self, body: dict[str, Any], summary: RequestSummary) -> ChatRequest:
        request = requests.parse_request(body)
        request.model = summary.model
        return request

    def render_response(self, response: ChatResponse, requested_model: str) -> dict[str, Any]:
        return responses.render_response(response, requested_model)

    def stream_encoder(self, summary: RequestSummary, request_id: str) -> StreamEncoder:
        return streams.AnthropicStreamEncoder(summary.model, request_id)

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
        data = [self.render_model(m) for m in models]
        return {"data": data, "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None, "has_more": False}

    def render_model(self, model: ModelInfo) -> dict[str, Any]:
        # ``lifecycle`` is required by recent SDKs' strict validation
        return {"type": "model", "id": model.id, "display_name": model.id, "created_at": rfc3339(model.created),
                "lifecycle": "active"}
