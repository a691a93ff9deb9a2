"""The inbound format ``openai.chat``: what OpenAI SDK clients speak."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faregate import jsonutil
from faregate.canonical import ChatRequest, ChatResponse, StreamEvent, Usage
from faregate.contracts import InboundFormat, ModelInfo, RequestSummary, Route, StreamEncoder
from faregate.errors import GatewayError, bad_request
from faregate_adapter_openai import convert


def prompt_chars(messages: list[Any]) -> int:
    total = 0
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        content = msg.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict):
                    text = part.get("text")
                    total += len(text) if isinstance(text, str) else 1000  # images etc.
        total += 8
    return total


class Encoder(StreamEncoder):
    def __init__(self, model: str, request_id: str, include_usage: bool) -> None:
        self._enc = convert.ChunkEncoder(model, request_id, include_usage)

    def encode(self, event: StreamEvent) -> bytes:
        return self._enc.encode(event)

    def finish(self, usage: Usage | None) -> bytes:
        return self._enc.finish(usage)

    def error(self, err: GatewayError) -> bytes:
        body = {"error": {"message": err.message, "type": err.type, "param": None, "code": err.code}}
        return b"data: " + jsonutil.dumps(body) + b"\n\n"


class OpenAIChatFormat(InboundFormat):
    name = "openai.chat"

    def routes(self) -> list[Route]:
        return [Route("POST", "/v1/chat/completions")]

    def summarize(self, body: dict[str, Any]) -> RequestSummary:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise bad_request("model is required", param="model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise bad_request("messages must be a non-empty array", param="messages")
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool)
                                       or max_tokens < 1):
            raise bad_request("max_tokens must be a positive integer", param="max_tokens")
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise bad_request("stream must be a boolean", param="stream")
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        return RequestSummary(model=model, stream=stream, max_tokens=max_tokens, include_usage=include_usage,
                              prompt_chars=prompt_chars(messages))

    def parse(self, body: dict[str, Any]) -> ChatRequest:
        return convert.parse_request(body)

    def render_response(self, response: ChatResponse, requested_model: str) -> dict[str, Any]:
        return convert.render_response(response, requested_model)

    def stream_encoder(self, summary: RequestSummary, request_id: str) -> StreamEncoder:
        return Encoder(summary.model, request_id, summary.include_usage)

    def render_error(self, err: GatewayError, request_id: str) -> tuple[int, bytes]:
        message = f"{err.message} (request id: {request_id})"
        body = {"error": {"message": message, "type": err.type, "param": err.param or "", "code": err.code}}
        return err.status, jsonutil.dumps(body)

    def render_model_list(self, models: list[ModelInfo]) -> dict[str, Any]:
        return {"success": True, "object": "list",
                "data": [self.render_model(m) for m in models]}

    def render_model(self, model: ModelInfo) -> dict[str, Any]:
        return {"id": model.id, "object": "model", "created": model.created, "owned_by": model.owned_by}

    def claims_model_list(self, headers: Mapping[str, str], args: Mapping[str, str]) -> bool:
        return False  # the default list format; other formats claim by their headers
