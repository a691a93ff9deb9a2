"""The channel type ``gemini`` (new-api channel type 24): Google AI Studio's Gemini API.

Calls go to ``{base_url}/{version}/models/{model}:{action}`` with the key in
``x-goog-api-key`` (never in the URL, which proxies and logs keep); the version is the
channel's ``other`` field when it names one (``v1``, ``v1alpha``), else ``v1beta``. A
channel with several keys (one a line) rotates them as the core picks (random or polling)."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from faregate.api import (
    ChannelProbe,
    ChatRequest,
    ChatResponse,
    GatewayError,
    HttpJsonProvider,
    PassthroughStream,
    RequestSummary,
    StreamParser,
    UpstreamRequest,
    UpstreamTarget,
    Usage,
    json_dumps,
    json_loads,
    malformed_response,
)
from faregate_adapter_gemini import errors, openai_embeddings, requests, responses, streams
from faregate_adapter_gemini.catalog import GEMINI_MODELS
from faregate_adapter_gemini.fields import get
from faregate_adapter_gemini.names import (
    BATCH_EMBED,
    DEFAULT_BASE_URL,
    EMBED,
    EMBED_KIND,
    FORMAT_NAME,
    GEMINI_CHANNEL_TYPE,
    GENERATE,
    STREAM_GENERATE,
    upstream_version,
)
from faregate_adapter_gemini.summary import GeminiSummary

if TYPE_CHECKING:
    from faregate_adapter_gemini.testing.fake import FakeGemini

JSON = "application/json"


class GeminiProvider(HttpJsonProvider):
    name = "gemini"
    channel_types = (GEMINI_CHANNEL_TYPE,)
    native_format = FORMAT_NAME
    default_base_url = DEFAULT_BASE_URL
    #: OpenAI's ``embeddings`` too, converted to ``batchEmbedContents`` (:mod:`.openai_embeddings`)
    endpoints = frozenset({"chat", EMBED_KIND, openai_embeddings.OPENAI_EMBEDDINGS})
    model_catalog = MappingProxyType({GEMINI_CHANNEL_TYPE: GEMINI_MODELS})
    auth_header = "x-goog-api-key"
    auth_prefix = ""

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeGemini:
        """The fake Gemini server (:mod:`faregate_adapter_gemini.testing`)."""
        from faregate_adapter_gemini.testing.fake import FakeGemini

        return FakeGemini(host, port, key=api_key, validate_requests=False)

    # ---- requests -----------------------------------------------------------------------
    def action_url(self, target: UpstreamTarget, action: str, *, sse: bool = False) -> str:
        """``…/{version}/models/{model}:{action}``; the model quoted, so no name can leave the path."""
        model = quote(target.model.removeprefix("models/"), safe="-._~")
        url = self.url(target, f"/{upstream_version(target.other)}/models/{model}:{action}")
        return url + "?alt=sse" if sse else url

    def call_headers(self, target: UpstreamTarget, *, sse: bool) -> dict[str, str]:
        return {"Content-Type": JSON, "Accept": "text/event-stream" if sse else JSON, **self.auth_headers(target)}

    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        return requests.render_request(request, target.model, target.settings)

    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest:
        body = json_dumps(self.render_request(request, target))
        action = STREAM_GENERATE if target.stream else GENERATE
        return UpstreamRequest("POST", self.action_url(target, action, sse=target.stream),
                               self.call_headers(target, sse=target.stream), body)

    def build_passthrough(self, body: dict[str, Any], raw: bytes, target: UpstreamTarget,
                          summary: RequestSummary) -> UpstreamRequest:
        """The client's bytes as they came: the model travels in the URL, so even a mapped
        model changes nothing in the body. A stream keeps the client's framing."""
        native = summary if isinstance(summary, GeminiSummary) else GeminiSummary(model=summary.model)
        sse = summary.stream and native.sse
        return UpstreamRequest("POST", self.action_url(target, native.action, sse=sse),
                               self.call_headers(target, sse=sse), raw)

    def build_embed(self, action: str, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest:
        return UpstreamRequest("POST", self.action_url(target, action), self.call_headers(target, sse=False),
                               raw or json_dumps(body))

    def build_embeddings(self, body: dict[str, Any], target: UpstreamTarget) -> UpstreamRequest:
        """An OpenAI ``/v1/embeddings`` body (checked; ``model`` the channel's) as ``batchEmbedContents``."""
        return self.build_embed(BATCH_EMBED, openai_embeddings.batch_request(body, target.model), b"", target)

    def read_embeddings(self, body: bytes, request: dict[str, Any]) -> tuple[dict[str, Any], Usage | None]:
        return openai_embeddings.openai_answer(json_loads(body), request)

    def probe(self, endpoint: str, target: UpstreamTarget) -> ChannelProbe | None:
        """The channel test of new-api's ``embeddings`` endpoint type: one ``embedContent``
        (the Gemini-native embeddings these channels serve; chat's test is the core's)."""
        if endpoint != "embeddings":
            return None
        body = {"model": f"models/{target.model}", "content": {"parts": [{"text": "hi"}]}}
        return ChannelProbe(self.build_embed(EMBED, body, b"", target), _an_embedding)

    # ---- answers ------------------------------------------------------------------------
    def read_response(self, obj: Any) -> ChatResponse:
        return responses.parse_response(obj)

    def read_usage(self, obj: Any) -> Usage | None:
        if not responses.is_response(obj):
            raise ValueError("not a GenerateContentResponse")
        return responses.parse_usage(get(obj, "usageMetadata"))

    def stream_parser(self) -> StreamParser:
        return streams.GeminiStreamParser()

    def passthrough_stream(self, summary: RequestSummary) -> PassthroughStream:
        native = summary if isinstance(summary, GeminiSummary) else GeminiSummary(model=summary.model)
        return streams.GeminiPassthrough(sse=native.sse, candidates=native.candidates)

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        return errors.parse_error(status, body)

    # ---- model lists --------------------------------------------------------------------
    def models_request(self, target: UpstreamTarget) -> UpstreamRequest | None:
        url = self.url(target, f"/{upstream_version(target.other)}/models") + "?pageSize=1000"
        return UpstreamRequest("GET", url, self.auth_headers(target))

    def parse_models(self, body: bytes) -> list[str]:
        """``{"models": [{"name": "models/…"}, …]}`` (the first page: 1000 models)."""
        try:
            found = json_loads(body).get("models") or []
        except (ValueError, AttributeError):
            raise malformed_response() from None
        if not isinstance(found, list):
            raise malformed_response()
        return [str(m["name"]).removeprefix("models/") for m in found
                if isinstance(m, dict) and isinstance(m.get("name"), str)]


def _an_embedding(body: bytes) -> object:
    """``{"embedding": {"values": [...]}}``, an ``EmbedContentResponse``; ``ValueError`` otherwise."""
    answer = json_loads(body)
    embedding = answer.get("embedding") if isinstance(answer, dict) else None
    if not isinstance(embedding, dict) or not isinstance(embedding.get("values"), list):
        raise ValueError("not an embedContent answer")
    return answer
