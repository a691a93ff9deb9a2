"""The inbound format ``anthropic.messages``: what Anthropic SDK clients (and Claude
Code) speak."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from faregate import jsonutil
from faregate.canonical import ChatRequest, ChatResponse, StreamEvent, Usage
from faregate.contracts import InboundFormat, ModelInfo, RequestSummary, Route, StreamEncoder
from faregate.errors import GatewayError, bad_request
from faregate_adapter_anthropic import convert

FORMAT_NAME = "anthropic.messages"
# headers that mark a request as Anthropic's; ``vendor-version`` is the neutral alias
VERSION_HEADERS = ("anthropic-version", "vendor-version")


def _text_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    total = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                total += len(str(block.get("text", "")))
            elif kind == "thinking":
                total += len(str(block.get("thinking", "")))
            elif kind == "tool_use":
                total += len(jsonutil.dumps(block.get("input") or {})) + len(str(block.get("name", "")))
            elif kind == "tool_result":
                total += _text_chars(block.get("content"))
            else:
                total += 1000  # images, documents: a rough allowance
    return total


def prompt_chars(body: dict[str, Any]) -> int:
    """Characters of the prompt (system, messages, tool definitions) for estimates."""
    total = _text_chars(body.get("system"))
    for msg in body.get("messages") or []:
        if isinstance(msg, dict):
            total += _text_chars(msg.get("content")) + 8
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        total += len(jsonutil.dumps(tools))
    return total


def rfc3339(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class AnthropicEncoder(StreamEncoder):
    def __init__(self, model: str, request_id: str) -> None:
        self._enc = convert.EventEncoder(model, request_id)

    def encode(self, event: StreamEvent) -> bytes:
        return self._enc.encode(event)

    def finish(self, usage: Usage | None) -> bytes:
        return self._enc.finish(usage)

    def error(self, err: GatewayError) -> bytes:
        _, payload = convert.error_payload(err)
        return convert.sse("error", payload)


class AnthropicMessagesFormat(InboundFormat):
    name = FORMAT_NAME

    def routes(self) -> list[Route]:
        return [Route("POST", "/v1/messages")]

    def api_key(self, headers: Mapping[str, str], args: Mapping[str, str]) -> str | None:
        key = headers.get("x-api-key")
        if key:
            return key.strip()
        return super().api_key(headers, args)

    def summarize(self, body: dict[str, Any]) -> RequestSummary:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise bad_request("model: Field required", param="model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise bad_request("messages: at least one message is required", param="messages")
        max_tokens = body.get("max_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise bad_request("max_tokens: Field required (a positive integer)", param="max_tokens")
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise bad_request("stream: Input should be a valid boolean", param="stream")
        # a Messages stream always carries usage (message_start / message_delta)
        return RequestSummary(model=model, stream=stream, max_tokens=max_tokens, include_usage=True,
                              prompt_chars=prompt_chars(body))

    def parse(self, body: dict[str, Any]) -> ChatRequest:
        return convert.parse_request(body)

    def render_response(self, response: ChatResponse, requested_model: str) -> dict[str, Any]:
        return convert.render_response(response, requested_model)

    def stream_encoder(self, summary: RequestSummary, request_id: str) -> StreamEncoder:
        return AnthropicEncoder(summary.model, request_id)

    def render_error(self, err: GatewayError, request_id: str) -> tuple[int, bytes]:
        status, payload = convert.error_payload(err)
        payload["request_id"] = request_id
        return status, jsonutil.dumps(payload)

    # model lists -----------------------------------------------------------------------
    def claims_model_list(self, headers: Mapping[str, str], args: Mapping[str, str]) -> bool:
        return any(headers.get(name) for name in VERSION_HEADERS)

    def render_model_list(self, models: list[ModelInfo]) -> dict[str, Any]:
        data = [self.render_model(m) for m in models]
        return {"data": data, "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None, "has_more": False}

    def render_model(self, model: ModelInfo) -> dict[str, Any]:
        # ``lifecycle`` is required by recent SDKs' strict validation
        return {"type": "model", "id": model.id, "display_name": model.id, "created_at": rfc3339(model.created),
                "lifecycle": "active"}
