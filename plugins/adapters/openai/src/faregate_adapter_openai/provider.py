"""The channel type ``openai``: OpenAI and any OpenAI-compatible base URL.

:class:`OpenAICompatibleProvider` is the whole wire protocol; a vendor that speaks it
is a few lines of data (its name, channel types, base URL), as :class:`OpenAIProvider`
shows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

from faregate.api import (
    WEBSOCKET,
    BalanceFetch,
    ChatRequest,
    ChatResponse,
    GatewayError,
    HttpJsonProvider,
    JSONDecodeError,
    PassthroughStream,
    RequestSummary,
    StreamParser,
    UpstreamRequest,
    UpstreamTarget,
    Usage,
    join_url,
    json_dumps,
    json_loads,
)
from faregate_adapter_openai import billing, requests, responses, streams
from faregate_adapter_openai.catalog import MODEL_CATALOG
from faregate_adapter_openai.format import FORMAT_NAME

if TYPE_CHECKING:
    from faregate_adapter_openai.testing.server import FakeOpenAI

# new-api channel types served by the OpenAI wire format (OpenAI, Azure-less resellers,
# Custom, OpenRouter, DeepSeek, xAI, SiliconFlow, Moonshot …)
OPENAI_COMPATIBLE_TYPES = (1, 6, 7, 8, 9, 10, 12, 13, 19, 20, 21, 22, 25, 31, 40, 43, 47, 48)
#: the vendors whose API serves only part of OpenAI's (what each documents): their channels
#: are never chosen for the rest. Every other type (OpenAI, Custom, the resellers,
#: OpenRouter …) forwards whatever OpenAI serves, as new-api's OpenAI adaptor does
NARROWER_TYPES: dict[int, frozenset[str]] = {
    25: frozenset({"chat"}),  # Moonshot
    31: frozenset({"chat"}),  # 01.AI
    40: frozenset({"chat", "embeddings", "rerank", "audio_transcriptions", "audio_speech"}),  # SiliconFlow
    43: frozenset({"chat", "completions"}),  # DeepSeek (completions: its FIM beta)
    47: frozenset({"chat", "embeddings", "audio_transcriptions", "audio_translations", "audio_speech"}),  # Xinference
    # xAI (images: generations; its edits take another JSON shape); it serves the Responses API itself
    48: frozenset({"chat", "images", "responses"}),
}
#: a base URL's scheme → its WebSocket's (realtime sessions)
WS_SCHEMES = {"http": "ws", "https": "wss"}
#: where a vendor serves a JSON endpoint elsewhere than OpenAI does, by channel type
TYPE_PATHS: dict[int, dict[str, str]] = {
    43: {"completions": "/beta/completions"},  # DeepSeek's FIM completions, as new-api calls them
}


def chat_url(base_url: str) -> str:
    return join_url(base_url, "/v1/chat/completions")


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
            chunk = json_loads(data)
        except JSONDecodeError:
            chunk = None
        if not isinstance(chunk, dict):
            # garbage would break the client's SDK: fail over before the first byte, in-band after
            self.error = GatewayError(502, "upstream sent a malformed stream event", code="bad_response_body",
                                      upstream=True)
            return False
        if isinstance(chunk.get("error"), dict):
            err = chunk["error"]
            self.error = GatewayError(502, str(err.get("message", "upstream error")),
                                      type=str(err.get("type") or "upstream_error"), code=err.get("code"),
                                      upstream=True)
            return False
        choices = chunk.get("choices")
        if choices:
            for choice in choices:
                delta = choice.get("delta")
                if delta is None:  # a legacy completion's chunk (``text_completion``)
                    text = choice.get("text")
                    if isinstance(text, str):
                        self.output_chars += len(text)
                    continue
                for key in ("content", "reasoning_content"):
                    value = delta.get(key)
                    if isinstance(value, str):
                        self.output_chars += len(value)
                for call in delta.get("tool_calls") or []:
                    self.output_chars += len((call.get("function") or {}).get("arguments") or "")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = responses.parse_usage(usage)
            if not choices and not self.client_wants_usage:
                return False
        return True


class OpenAICompatibleProvider(HttpJsonProvider):
    """OpenAI's Chat Completions wire protocol; subclasses declare ``name``,
    ``channel_types`` and ``default_base_url``."""

    native_format = FORMAT_NAME
    endpoints = frozenset({"chat", "embeddings", "moderations", "completions", "rerank", "images", "image_edits",
                           "responses", "responses_compact",
                           "audio_transcriptions", "audio_translations", "audio_speech", "realtime"})
    #: where each JSON endpoint's requests go, under the channel's base URL (see also TYPE_PATHS)
    json_paths: ClassVar[dict[str, str]] = {"embeddings": "/v1/embeddings", "moderations": "/v1/moderations",
                                            "completions": "/v1/completions", "rerank": "/v1/rerank",
                                            "images": "/v1/images/generations", "image_edits": "/v1/images/edits",
                                            "responses": "/v1/responses", "responses_compact": "/v1/responses/compact",
                                            "audio_transcriptions": "/v1/audio/transcriptions",
                                            "audio_translations": "/v1/audio/translations",
                                            "audio_speech": "/v1/audio/speech"}
    #: the body field of the output bound in converted requests; OpenAI's current one,
    #: a vendor that only knows the deprecated ``max_tokens`` overrides it
    max_tokens_field: ClassVar[str] = "max_completion_tokens"
    #: the channel types whose balance comes from OpenAI's billing endpoints (none by default)
    balance_types: ClassVar[frozenset[int]] = frozenset()

    def serves(self, endpoint: str, channel_type: int) -> bool:
        narrower = NARROWER_TYPES.get(channel_type)
        return endpoint in self.endpoints and (narrower is None or endpoint in narrower)

    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        body = requests.render_request(request, target.model, self.max_tokens_field)
        if target.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def passthrough_body(self, body: dict[str, Any], target: UpstreamTarget,
                         summary: RequestSummary) -> dict[str, Any] | None:
        changed = super().passthrough_body(body, target, summary)
        if summary.stream and not summary.include_usage:  # the gateway bills from the usage chunk
            body = changed or body
            options = body.get("stream_options")
            changed = {**body, "stream_options": {**(options if isinstance(options, dict) else {}),
                                                  "include_usage": True}}
        return changed

    def build_json(self, endpoint: str, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest:
        """``raw`` as the client sent it (``b""``: encode ``body``, whose model changed)."""
        payload = raw or json_dumps(body)
        headers = {"Content-Type": "application/json", **self.auth_headers(target)}
        path = TYPE_PATHS.get(target.channel_type, {}).get(endpoint) or self.json_paths[endpoint]
        return UpstreamRequest("POST", self.url(target, path), headers, payload)

    def build_form(self, endpoint: str, payload: bytes, content_type: str, target: UpstreamTarget) -> UpstreamRequest:
        """A ``multipart/form-data`` ``payload`` (``content_type`` carries its boundary)."""
        headers = {"Content-Type": content_type, **self.auth_headers(target)}
        path = TYPE_PATHS.get(target.channel_type, {}).get(endpoint) or self.json_paths[endpoint]
        return UpstreamRequest("POST", self.url(target, path), headers, payload)

    def build_realtime(self, target: UpstreamTarget, beta: bool) -> UpstreamRequest:
        """The channel's Realtime API WebSocket (``ws(s)://…/v1/realtime?model=``), with its
        key; ``OpenAI-Beta: realtime=v1`` only for a client of the beta protocol (the GA
        protocol is what an upstream speaks without it)."""
        url = self.url(target, "/v1/realtime")
        scheme, sep, rest = url.partition("://")
        url = f"{WS_SCHEMES.get(scheme.lower(), scheme)}{sep}{rest}?model={quote(target.model, safe='')}"
        headers = self.auth_headers(target)
        if beta:
            headers["OpenAI-Beta"] = "realtime=v1"
        return UpstreamRequest(WEBSOCKET, url, headers, b"")

    def read_response(self, obj: Any) -> ChatResponse:
        return responses.parse_response(obj)

    def read_usage(self, obj: Any) -> Usage | None:
        if not isinstance(obj, dict) or not isinstance(obj.get("choices"), list):
            raise ValueError("not a chat completion")
        # passed on unread: a choice without its message would break the client's SDK instead
        if not all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in obj["choices"]):
            raise ValueError("a chat completion choice without a message")
        return responses.parse_usage(obj.get("usage"))

    def stream_parser(self) -> StreamParser:
        return streams.OpenAIStreamParser()

    def passthrough_stream(self, summary: RequestSummary) -> PassthroughStream:
        return OpenAIPassthrough(summary)

    async def fetch_balance(self, target: UpstreamTarget, fetch: BalanceFetch) -> float | None:
        """OpenAI's billing endpoints (see :mod:`faregate_adapter_openai.billing`) for the
        :attr:`balance_types`; other types cannot tell."""
        if target.channel_type not in self.balance_types:
            return None
        return await billing.fetch_balance(target, fetch, self.auth_headers(target))


class OpenAIProvider(OpenAICompatibleProvider):
    name = "openai"
    channel_types = OPENAI_COMPATIBLE_TYPES
    default_base_url = "https://api.openai.com"
    balance_types = frozenset({1, 8})  # OpenAI and Custom, as new-api
    model_catalog = MODEL_CATALOG

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeOpenAI:
        """The fake OpenAI server (:mod:`faregate_adapter_openai.testing`)."""
        from faregate_adapter_openai.testing.server import FakeOpenAI

        return FakeOpenAI(host, port, api_key=api_key, validate_requests=False)
