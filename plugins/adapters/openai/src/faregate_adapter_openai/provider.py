"""The channel type ``openai``: OpenAI and any OpenAI-compatible base URL."""

from __future__ import annotations

from typing import Any

from faregate import jsonutil
from faregate.canonical import ChatRequest, ChatResponse, Usage
from faregate.contracts import (
    PassthroughStream,
    Provider,
    RequestSummary,
    StreamParser,
    UpstreamRequest,
    UpstreamTarget,
)
from faregate.errors import GatewayError, upstream_error
from faregate_adapter_openai import convert

# new-api channel types served by the OpenAI wire format (OpenAI, Azure-less resellers,
# Custom, OpenRouter, DeepSeek, xAI, SiliconFlow, Moonshot …)
OPENAI_COMPATIBLE_TYPES = (1, 6, 7, 8, 9, 10, 12, 13, 19, 20, 21, 22, 25, 31, 40, 43, 47, 48)


def chat_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base + "/chat/completions" if base.endswith("/v1") else base + "/v1/chat/completions"


def headers_for(target: UpstreamTarget) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {target.key}"}
    if target.stream:
        headers["Accept"] = "text/event-stream"
    return headers


class OpenAIPassthrough(PassthroughStream):
    """Forward OpenAI chunks unchanged; read usage; drop the usage-only chunk when the
    client did not ask for it (the gateway asked the upstream for it)."""

    def __init__(self, summary: RequestSummary) -> None:
        self.client_wants_usage = summary.include_usage
        self.usage: Usage | None = None
        self.done = False
        self.error: GatewayError | None = None
        self.output_chars = 0

    def feed(self, event: str | None, data: bytes) -> bool:
        if data == b"[DONE]":
            self.done = True
            return True
        try:
            chunk = jsonutil.loads(data)
        except jsonutil.JSONDecodeError:
            return True  # not ours to judge; the client sees what the upstream sent
        if not isinstance(chunk, dict):
            return True
        if isinstance(chunk.get("error"), dict):
            err = chunk["error"]
            self.error = GatewayError(502, str(err.get("message", "upstream error")),
                                      type=str(err.get("type") or "upstream_error"), code=err.get("code"),
                                      upstream=True)
            return False
        choices = chunk.get("choices")
        if choices:
            for choice in choices:
                delta = choice.get("delta") or {}
                for key in ("content", "reasoning_content"):
                    value = delta.get(key)
                    if isinstance(value, str):
                        self.output_chars += len(value)
                for call in delta.get("tool_calls") or []:
                    self.output_chars += len((call.get("function") or {}).get("arguments") or "")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = convert.parse_usage(usage)
            if not choices and not self.client_wants_usage:
                return False
        return True


class OpenAIProvider(Provider):
    name = "openai"
    channel_types = OPENAI_COMPATIBLE_TYPES
    native_format = "openai.chat"
    default_base_url = "https://api.openai.com"

    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest:
        body = convert.render_request(request, target.model)
        if target.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return UpstreamRequest("POST", chat_url(target.base_url), headers_for(target), jsonutil.dumps(body))

    def build_passthrough(self, body: dict[str, Any], raw: bytes, target: UpstreamTarget,
                          summary: RequestSummary) -> UpstreamRequest:
        changed = False
        if target.model != summary.model:
            body = {**body, "model": target.model}
            changed = True
        if summary.stream and not summary.include_usage:
            options = body.get("stream_options")
            body = {**body, "stream_options": {**(options if isinstance(options, dict) else {}),
                                               "include_usage": True}}
            changed = True
        payload = jsonutil.dumps(body) if changed else raw  # untouched bodies go out as they came
        return UpstreamRequest("POST", chat_url(target.base_url), headers_for(target), payload)

    def parse_response(self, body: bytes) -> ChatResponse:
        try:
            return convert.parse_response(jsonutil.loads(body))
        except (jsonutil.JSONDecodeError, ValueError, TypeError, AttributeError):
            raise GatewayError(502, "upstream returned a malformed response", code="bad_response_body",
                               upstream=True) from None

    def passthrough_usage(self, body: bytes) -> Usage | None:
        try:
            parsed = jsonutil.loads(body)
        except jsonutil.JSONDecodeError:
            raise GatewayError(502, "upstream returned a malformed response", code="bad_response_body",
                               upstream=True) from None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("choices"), list):
            raise GatewayError(502, "upstream returned a malformed response", code="bad_response_body",
                               upstream=True)
        return convert.parse_usage(parsed.get("usage"))

    def stream_parser(self) -> StreamParser:
        return convert.ChunkParser()

    def passthrough_stream(self, summary: RequestSummary) -> PassthroughStream:
        return OpenAIPassthrough(summary)

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        return upstream_error(status, body)

    def models_request(self, target: UpstreamTarget) -> UpstreamRequest:
        base = target.base_url.rstrip("/")
        url = base + "/models" if base.endswith("/v1") else base + "/v1/models"
        return UpstreamRequest("GET", url, {"Authorization": f"Bearer {target.key}"})

    def parse_models(self, body: bytes) -> list[str]:
        data = jsonutil.loads(body).get("data") or []
        return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]
