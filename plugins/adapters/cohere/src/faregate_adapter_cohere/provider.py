"""The channel type ``cohere`` (new-api's 34): Cohere's v2 Chat API (``POST /v2/chat``)
for every client format, converted through the canonical model, and its reranker
(``POST /v2/rerank``) for the gateway's ``/v1/rerank``. ``Authorization: Bearer <key>``;
the base URL defaults to new-api's ``https://api.cohere.ai`` and is the channel's to
override."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from faregate.api import (
    ChannelProbe,
    ChatRequest,
    ChatResponse,
    GatewayError,
    HttpJsonProvider,
    StreamParser,
    UpstreamRequest,
    UpstreamTarget,
    json_dumps,
    json_loads,
    malformed_response,
    probe_body,
)
from faregate_adapter_cohere import errors, requests, rerank, responses, streams
from faregate_adapter_cohere.catalog import COHERE_MODELS

if TYPE_CHECKING:
    from faregate_adapter_cohere.testing.fake import FakeCohere

COHERE_CHANNEL_TYPE = 34
CHAT_PATH = "/v2/chat"
RERANK_PATH = "/v2/rerank"


class CohereProvider(HttpJsonProvider):
    name = "cohere"
    channel_types = (COHERE_CHANNEL_TYPE,)
    endpoints = frozenset({"chat", "rerank"})
    model_catalog = MappingProxyType({COHERE_CHANNEL_TYPE: COHERE_MODELS})
    native_format = None  # no client speaks Cohere's format: every request is converted
    default_base_url = "https://api.cohere.ai"
    chat_path = CHAT_PATH
    models_path = "/v1/models"
    models_query = "page_size=1000"

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeCohere:
        """The fake Cohere server (:mod:`faregate_adapter_cohere.testing`)."""
        from faregate_adapter_cohere.testing.fake import FakeCohere

        return FakeCohere(host, port, key=api_key, validate_requests=False)

    # ---- chat ---------------------------------------------------------------------------
    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        safety = target.settings.get("safety_mode") if target.settings else None
        return requests.render_request(request, target.model, target.stream, safety)

    def read_response(self, obj: Any) -> ChatResponse:
        return responses.parse_response(obj)

    def stream_parser(self) -> StreamParser:
        return streams.CohereStreamParser()

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        return errors.parse_error(status, body)

    def parse_models(self, body: bytes) -> list[str]:
        """``{"models": [{"name": …}, …]}`` (Cohere's ``ListModelsResponse``)."""
        try:
            models = json_loads(body).get("models")
        except (ValueError, AttributeError):
            raise malformed_response() from None
        if not isinstance(models, list):
            raise malformed_response()
        return [str(m["name"]) for m in models if isinstance(m, dict) and isinstance(m.get("name"), str)]

    # ---- rerank (the OpenAI plugin's RerankProvider protocol) ------------------------------
    def build_rerank(self, body: dict[str, Any], target: UpstreamTarget) -> UpstreamRequest:
        return UpstreamRequest("POST", self.url(target, RERANK_PATH), self.headers(target),
                               json_dumps(rerank.request_body(body)))

    def read_rerank(self, body: bytes, request: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
        return rerank.read_answer(body, request)

    def probe(self, endpoint: str, target: UpstreamTarget) -> ChannelProbe | None:
        """The channel test of rerank (chat's is the core's): two documents, the better one back."""
        if endpoint != "rerank":
            return None
        body = probe_body("rerank", target.model)
        return ChannelProbe(self.build_rerank(body, target), lambda answer: self.read_rerank(answer, body))
