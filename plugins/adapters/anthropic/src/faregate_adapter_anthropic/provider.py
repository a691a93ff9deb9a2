"""The channel type ``anthropic`` (new-api channel type 14): Anthropic's Messages API."""

from __future__ import annotations

from collections.abc import Mapping
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
from faregate_adapter_anthropic import convert
from faregate_adapter_anthropic.format import FORMAT_NAME

ANTHROPIC_CHANNEL_TYPE = 14
ANTHROPIC_VERSION = "2023-06-01"


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None and isinstance(headers, dict):  # plain dicts are case-sensitive
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value or None


def messages_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base + "/messages" if base.endswith("/v1") else base + "/v1/messages"


def headers_for(target: UpstreamTarget) -> dict[str, str]:
    client = target.client_headers
    version = _header(client, "anthropic-version") or _header(client, "vendor-version") or ANTHROPIC_VERSION
    headers = {"Content-Type": "application/json", "x-api-key": target.key, "anthropic-version": version}
    beta = _header(client, "anthropic-beta")
    if beta:
        headers["anthropic-beta"] = beta  # opt-in features (1h cache, interleaved thinking …)
    if target.stream:
        headers["Accept"] = "text/event-stream"
    return headers


def _bad_body() -> GatewayError:
    return GatewayError(502, "upstream returned a malformed response", code="bad_response_body", upstream=True)


def _stream_error(err: Any) -> GatewayError:
    err = err if isinstance(err, dict) else {}
    kind = str(err.get("type") or "api_error")
    return GatewayError(convert.ANTHROPIC_ERROR_TYPES.get(kind, 502), str(err.get("message") or "upstream error"),
                        type=kind, code=kind, upstream=True)


class AnthropicPassthrough(PassthroughStream):
    """Forward Anthropic events byte for byte; read usage from message_start and
    message_delta (cumulative totals, *set* not added: sub2api #2332 double-counted)."""

    def __init__(self) -> None:
        self.tracker = convert.UsageTracker()
        self.usage: Usage | None = None
        self.done = False
        self.error: GatewayError | None = None
        self.output_chars = 0

    def feed(self, event: str | None, data: bytes) -> bool:
        try:
            obj = jsonutil.loads(data)
        except jsonutil.JSONDecodeError:
            return True  # not ours to judge; the client sees what the upstream sent
        if not isinstance(obj, dict):
            return True
        kind = obj.get("type") or event
        if kind == "content_block_delta":
            delta = obj.get("delta") or {}
            for key in ("text", "thinking", "partial_json"):
                value = delta.get(key)
                if isinstance(value, str):
                    self.output_chars += len(value)
        elif kind == "message_start":
            message = obj.get("message")
            if isinstance(message, dict) and isinstance(message.get("usage"), dict):
                self.tracker.update(message["usage"])
                self.usage = self.tracker.usage()
        elif kind == "message_delta":
            if isinstance(obj.get("usage"), dict):
                self.tracker.update(obj["usage"])
                self.usage = self.tracker.usage()
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            self.error = _stream_error(obj.get("error"))
            return False  # the relay sends it through the format's error() instead
        return True


class AnthropicProvider(Provider):
    name = "anthropic"
    channel_types = (ANTHROPIC_CHANNEL_TYPE,)
    native_format = FORMAT_NAME
    default_base_url = "https://api.anthropic.com"

    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest:
        default_max = target.settings.get("default_max_tokens") if target.settings else None
        if not isinstance(default_max, int) or default_max < 1:
            default_max = convert.DEFAULT_MAX_TOKENS
        body = convert.render_request(request, target.model, default_max)
        if target.stream:
            body["stream"] = True
        else:
            body.pop("stream", None)
        return UpstreamRequest("POST", messages_url(target.base_url), headers_for(target), jsonutil.dumps(body))

    def build_passthrough(self, body: dict[str, Any], raw: bytes, target: UpstreamTarget,
                          summary: RequestSummary) -> UpstreamRequest:
        payload = raw
        if target.model != summary.model:
            payload = jsonutil.dumps({**body, "model": target.model})  # only the model mapping changes
        return UpstreamRequest("POST", messages_url(target.base_url), headers_for(target), payload)

    def parse_response(self, body: bytes) -> ChatResponse:
        try:
            return convert.parse_response(jsonutil.loads(body))
        except (jsonutil.JSONDecodeError, ValueError, TypeError, AttributeError):
            raise _bad_body() from None

    def passthrough_usage(self, body: bytes) -> Usage | None:
        try:
            parsed = jsonutil.loads(body)
        except jsonutil.JSONDecodeError:
            raise _bad_body() from None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("content"), list):
            raise _bad_body()
        return convert.parse_usage(parsed.get("usage"))

    def stream_parser(self) -> StreamParser:
        return convert.EventParser()

    def passthrough_stream(self, summary: RequestSummary) -> PassthroughStream:
        return AnthropicPassthrough()

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        err = upstream_error(status, body)
        if err.code is None:  # Anthropic errors carry only a type; it doubles as the code
            err.code = err.type
        return err

    def models_request(self, target: UpstreamTarget) -> UpstreamRequest:
        base = target.base_url.rstrip("/")
        url = (base + "/models" if base.endswith("/v1") else base + "/v1/models") + "?limit=1000"
        return UpstreamRequest("GET", url, {"x-api-key": target.key, "anthropic-version": ANTHROPIC_VERSION})

    def parse_models(self, body: bytes) -> list[str]:
        data = jsonutil.loads(body).get("data") or []
        return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]
