"""The channel type ``openai``: OpenAI and the vendors that speak its wire format.

:class:`OpenAICompatibleProvider` is the whole wire protocol; a vendor that speaks it is a
row of data (:mod:`faregate_adapter_openai.presets`), and :class:`OpenAIProvider` serves
every row."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

from faregate.api import (
    WEBSOCKET,
    BalanceFetch,
    ChannelProbe,
    ChatRequest,
    ChatResponse,
    GatewayError,
    HttpJsonProvider,
    JSONDecodeError,
    PassthroughStream,
    RequestSummary,
    Services,
    StreamParser,
    UpstreamRequest,
    UpstreamTarget,
    Usage,
    join_url,
    json_dumps,
    json_loads,
    malformed_response,
)
from faregate_adapter_openai import billing, probes, requests, responses, streams
from faregate_adapter_openai.catalog import MODEL_CATALOG
from faregate_adapter_openai.format import FORMAT_NAME
from faregate_adapter_openai.presets import ALL_ENDPOINTS, OPENAI, OPENAI_PATHS, PRESETS, Preset

if TYPE_CHECKING:
    from faregate_adapter_openai.testing.server import FakeOpenAI

#: a base URL's scheme → its WebSocket's (realtime sessions)
WS_SCHEMES = {"http": "ws", "https": "wss"}
#: yuan per dollar without the gateway's options at hand (new-api's default ``Price``, the
#: ``USDExchangeRate`` option's default)
DEFAULT_YUAN_PER_DOLLAR = 7.3


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
        err = chunk.get("error")
        if isinstance(err, dict):
            self.error = GatewayError(502, str(err.get("message", "upstream error")),
                                      type=str(err.get("type") or "upstream_error"), code=err.get("code"),
                                      upstream=True)
            return False
        choices = chunk.get("choices")
        if choices:
            chars = 0  # the output's characters: what bills the stream when it reports no usage
            try:
                for choice in choices:
                    delta = choice.get("delta")
                    if delta is None:  # a legacy completion's chunk (``text_completion``)
                        text = choice.get("text")
                        if isinstance(text, str):
                            chars += len(text)
                        continue
                    content = delta.get("content")
                    if isinstance(content, str):
                        chars += len(content)
                    reasoning = delta.get("reasoning_content")
                    if isinstance(reasoning, str):
                        chars += len(reasoning)
                    calls = delta.get("tool_calls")
                    if calls:
                        for call in calls:
                            chars += len((call.get("function") or {}).get("arguments") or "")
            finally:  # what was counted before an event of the wrong shape stays counted
                self.output_chars += chars
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = responses.parse_usage(usage)
            if not choices and not self.client_wants_usage:
                return False
        return True


class OpenAICompatibleProvider(HttpJsonProvider):
    """OpenAI's wire protocol; subclasses declare ``name``, ``channel_types`` and either
    ``default_base_url`` or a row per type in :attr:`presets` (:mod:`.presets`: where each
    vendor serves what, and what it refuses)."""

    native_format = FORMAT_NAME
    endpoints = ALL_ENDPOINTS
    #: where each JSON endpoint's requests go, under the channel's base URL (a preset's
    #: ``api_root`` replaces their ``/v1``, its ``paths`` override them)
    json_paths: ClassVar[Mapping[str, str]] = OPENAI_PATHS
    #: the vendor of each channel type; a type without a row is OpenAI's API at the channel's URL
    presets: ClassVar[Mapping[int, Preset]] = MappingProxyType({})
    #: the running gateway (its ``USDExchangeRate`` converts yuan balances); None in unit tests
    services: Services | None = None

    def preset(self, channel_type: int) -> Preset:
        return self.presets.get(channel_type) or OPENAI

    def serves(self, endpoint: str, channel_type: int) -> bool:
        return endpoint in self.endpoints and self.preset(channel_type).serves(endpoint)

    def channel_type_name(self, channel_type: int) -> str:
        preset = self.presets.get(channel_type)
        return preset.name if preset else self.name

    def channel_type_base_url(self, channel_type: int) -> str:
        preset = self.presets.get(channel_type)
        return preset.base_url if preset else self.default_base_url

    def endpoint_url(self, target: UpstreamTarget, kind: str) -> str:
        """Where requests of ``kind`` (``chat``, ``models``, ``realtime`` or a JSON endpoint) go."""
        path = self.chat_path if kind == "chat" else self.models_path if kind == "models" else self.json_paths[kind]
        assert path is not None
        return self.preset(target.channel_type).url(target.base_url, kind, path, target.other, target.model)

    def auth_headers(self, target: UpstreamTarget) -> dict[str, str]:
        return self.preset(target.channel_type).auth_headers(self.auth_header, self.auth_prefix, target.key)

    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        preset = self.preset(target.channel_type)
        body = requests.render_request(request, target.model, preset.max_tokens_field)
        if target.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return preset.adapt(body, target.stream) or body

    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest:
        body = json_dumps(self.render_request(request, target))
        return UpstreamRequest("POST", self.endpoint_url(target, "chat"), self.headers(target), body)

    def passthrough_body(self, body: dict[str, Any], target: UpstreamTarget,
                         summary: RequestSummary) -> dict[str, Any] | None:
        """The channel's model mapping, then the vendor's quirks (:meth:`Preset.adapt`: a
        stream asks for its usage chunk, which the gateway bills from)."""
        changed = super().passthrough_body(body, target, summary)
        adapted = self.preset(target.channel_type).adapt(changed or body, summary.stream)
        return adapted if adapted is not None else changed

    def build_passthrough(self, body: dict[str, Any], raw: bytes, target: UpstreamTarget,
                          summary: RequestSummary) -> UpstreamRequest:
        changed = self.passthrough_body(body, target, summary)
        payload = raw if changed is None else json_dumps(changed)
        return UpstreamRequest("POST", self.endpoint_url(target, "chat"), self.headers(target), payload)

    def build_json(self, endpoint: str, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest:
        """``raw`` as the client sent it (``b""``: encode ``body``, whose model changed)."""
        payload = raw or json_dumps(body)
        headers = {"Content-Type": "application/json", **self.auth_headers(target)}
        return UpstreamRequest("POST", self.endpoint_url(target, endpoint), headers, payload)

    def probe(self, endpoint: str, target: UpstreamTarget) -> ChannelProbe | None:
        """The channel test of a JSON endpoint the type serves (:mod:`faregate_adapter_openai.probes`)."""
        return probes.probe(self, endpoint, target)

    def build_form(self, endpoint: str, payload: bytes, content_type: str, target: UpstreamTarget) -> UpstreamRequest:
        """A ``multipart/form-data`` ``payload`` (``content_type`` carries its boundary)."""
        headers = {"Content-Type": content_type, **self.auth_headers(target)}
        return UpstreamRequest("POST", self.endpoint_url(target, endpoint), headers, payload)

    def build_realtime(self, target: UpstreamTarget, beta: bool) -> UpstreamRequest:
        """The channel's Realtime API WebSocket (``ws(s)://…/v1/realtime?model=``), with its
        key; ``OpenAI-Beta: realtime=v1`` only for a client of the beta protocol (the GA
        protocol is what an upstream speaks without it)."""
        url = websocket_url(self.endpoint_url(target, "realtime"))
        headers = self.auth_headers(target)
        if beta:
            headers["OpenAI-Beta"] = "realtime=v1"
        return UpstreamRequest(WEBSOCKET, f"{url}?model={quote(target.model, safe='')}", headers, b"")

    def models_request(self, target: UpstreamTarget) -> UpstreamRequest | None:
        if self.models_path is None or not self.preset(target.channel_type).lists_models:
            return None
        query = f"?{self.models_query}" if self.models_query else ""
        return UpstreamRequest("GET", self.endpoint_url(target, "models") + query, self.auth_headers(target))

    def parse_models(self, body: bytes) -> list[str]:
        """OpenAI's ``{"data": [{"id"}]}``, or the bare array some vendors answer (Together)."""
        try:
            obj = json_loads(body)
        except JSONDecodeError:
            raise malformed_response() from None
        items = obj if isinstance(obj, list) else obj.get("data") if isinstance(obj, dict) else None
        if not isinstance(items, list):
            raise malformed_response()
        return [str(item["id"]) for item in items if isinstance(item, dict) and isinstance(item.get("id"), str)]

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
        """The balance API the type's row names (see :mod:`faregate_adapter_openai.billing`:
        OpenAI's billing endpoints for OpenAI and Custom, DeepSeek's, OpenRouter's,
        SiliconFlow's and Moonshot's own, as new-api), in dollars; other types cannot tell."""
        preset = self.presets.get(target.channel_type)
        reader = billing.READERS.get(preset.balance) if preset is not None else None
        if preset is None or reader is None:
            return None
        return await reader(dataclasses.replace(target, base_url=preset.base(target.base_url)), fetch,
                            self.auth_headers(target), self.yuan_per_dollar())

    def yuan_per_dollar(self) -> float:
        """The ``USDExchangeRate`` option (yuan per dollar) in force."""
        if self.services is None:
            return DEFAULT_YUAN_PER_DOLLAR
        rate = self.services.options.value("USDExchangeRate")
        return float(rate) if isinstance(rate, int | float) and rate > 0 else DEFAULT_YUAN_PER_DOLLAR


def websocket_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return f"{WS_SCHEMES.get(scheme.lower(), scheme)}{sep}{rest}"


class OpenAIProvider(OpenAICompatibleProvider):
    """OpenAI, and every vendor of :data:`~faregate_adapter_openai.presets.PRESETS`."""

    name = "openai"
    channel_types = tuple(PRESETS)
    presets = PRESETS
    default_base_url = ""  # per channel type: each row's own (the core's fallback would be one for all)
    model_catalog = MODEL_CATALOG

    def __init__(self, services: Services | None = None) -> None:
        self.services = services

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeOpenAI:
        """The fake OpenAI server (:mod:`faregate_adapter_openai.testing`)."""
        from faregate_adapter_openai.testing.server import FakeOpenAI

        return FakeOpenAI(host, port, api_key=api_key, validate_requests=False)
