"""The channel type ``anthropic`` (new-api channel type 14): Anthropic's Messages API."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from faregate.api import (
    ChatRequest,
    ChatResponse,
    GatewayError,
    HttpJsonProvider,
    JSONDecodeError,
    PassthroughStream,
    RequestSummary,
    StreamParser,
    UpstreamTarget,
    Usage,
    json_loads,
    upstream_error,
)
from faregate_adapter_anthropic import errors, requests, responses, streams
from faregate_adapter_anthropic.catalog import ANTHROPIC_MODELS
from faregate_adapter_anthropic.format import FORMAT_NAME

if TYPE_CHECKING:
    from faregate_adapter_anthropic.testing.fake import FakeAnthropic

ANTHROPIC_CHANNEL_TYPE = 14
ANTHROPIC_VERSION = "2023-06-01"


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None and isinstance(headers, dict):  # plain dicts are case-sensitive
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value or None


def _stream_error(err: Any) -> GatewayError:
    err = err if isinstance(err, dict) else {}
    kind = str(err.get("type") or "api_error")
    return errors.read_kind(GatewayError(errors.ANTHROPIC_ERROR_TYPES.get(kind, 502),
                                         str(err.get("message") or "upstream error"),
                                         type=kind, code=kind, upstream=True))


class AnthropicPassthrough(PassthroughStream):
    """Forward Anthropic events byte for byte; read usage from message_start and
    message_delta (cumulative totals, *set* not added: sub2api #2332 double-counted)."""

    def __init__(self) -> None:
        self.tracker = responses.UsageTracker()
        self.usage: Usage | None = None
        self.done = False
        self.error: GatewayError | None = None
        self.output_chars = 0

    def feed(self, event: str | None, data: bytes) -> bool:
        try:
            obj = json_loads(data)
        except JSONDecodeError:
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


class AnthropicProvider(HttpJsonProvider):
    name = "anthropic"
    channel_types = (ANTHROPIC_CHANNEL_TYPE,)
    model_catalog = MappingProxyType({ANTHROPIC_CHANNEL_TYPE: ANTHROPIC_MODELS})
    native_format = FORMAT_NAME
    default_base_url = "https://api.anthropic.com"
    chat_path = "/v1/messages"
    models_query = "limit=1000"
    auth_header = "x-api-key"
    auth_prefix = ""

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeAnthropic:
        """The fake Anthropic server (:mod:`faregate_adapter_anthropic.testing`)."""
        from faregate_adapter_anthropic.testing.fake import FakeAnthropic

        return FakeAnthropic(host, port, api_key=api_key, validate_requests=False)

    def auth_headers(self, target: UpstreamTarget) -> dict[str, str]:
        client = target.client_headers
        version = _header(client, "anthropic-version") or _header(client, "vendor-version") or ANTHROPIC_VERSION
        headers = {"x-api-key": target.key, "anthropic-version": version}
        beta = _header(client, "anthropic-beta")
        if beta:
            headers["anthropic-beta"] = beta  # opt-in features (1h cache, interleaved thinking …)
        return headers

    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        default_max = target.settings.get("default_max_tokens") if target.settings else None
        if not isinstance(default_max, int) or default_max < 1:
            default_max = requests.DEFAULT_MAX_TOKENS
        body = requests.render_request(request, target.model, default_max)
        if target.stream:
            body["stream"] = True
        else:
            body.pop("stream", None)
        return body

    def read_response(self, obj: Any) -> ChatResponse:
        return responses.parse_response(obj)

    def read_usage(self, obj: Any) -> Usage | None:
        if not isinstance(obj, dict) or not isinstance(obj.get("content"), list):
            raise ValueError("not a Messages response")
        return responses.parse_usage(obj.get("usage"))

    def stream_parser(self) -> StreamParser:
        return streams.AnthropicStreamParser()

    def passthrough_stream(self, summary: RequestSummary) -> PassthroughStream:
        return AnthropicPassthrough()

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        err = upstream_error(status, body)
        if err.code is None:  # Anthropic errors carry only a type; it doubles as the code
            err.code = err.type
        return errors.read_kind(err)
