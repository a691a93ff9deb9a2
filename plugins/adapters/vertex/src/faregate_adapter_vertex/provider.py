"""The channel type ``vertex`` (new-api channel type 41): Google Vertex AI.

Gemini models are called at ``…/publishers/google/models/{model}:generateContent`` (and
``:streamGenerateContent?alt=sse``) with Gemini's body, built and read by the Gemini
plugin's own code (a Gemini client's body passed through); Claude models at
``…/publishers/anthropic/models/{model}:rawPredict`` (``:streamRawPredict``) with
Anthropic's Messages body (``anthropic_version: vertex-2023-10-16``, no ``model``), built
and read by the Anthropic plugin's (an Anthropic client's body passed through). The path
is ``/v1/projects/{project}/locations/{region}/…`` on ``{region}-aiplatform.googleapis.com``
(``aiplatform.googleapis.com`` for ``global``); the base URL, when the channel sets one,
replaces the host. With a service account (:mod:`.keys`) each call carries an access token
(:mod:`.tokens`, the core's ``prepare_credential`` step) and the account's project; with an
API key, ``x-goog-api-key`` (never the URL) and the express-mode path
``/v1/publishers/google/models/…`` (or the project of the setting ``vertex_project``)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from faregate.api import (
    ChatRequest,
    ChatResponse,
    GatewayError,
    HttpJsonProvider,
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
    upstream_error,
)
from faregate_adapter_anthropic import requests as anthropic_requests
from faregate_adapter_anthropic import responses as anthropic_responses
from faregate_adapter_anthropic.provider import AnthropicPassthrough
from faregate_adapter_gemini import errors as gemini_errors
from faregate_adapter_gemini import requests as gemini_requests
from faregate_adapter_gemini import responses as gemini_responses
from faregate_adapter_gemini import streams as gemini_streams
from faregate_adapter_gemini.catalog import GEMINI_MODELS
from faregate_adapter_gemini.summary import GeminiSummary
from faregate_adapter_vertex.bodies import anthropic_body, without_call_ids
from faregate_adapter_vertex.keys import KeyProblem, channel_error, key_problem, key_type, region_for, service_account
from faregate_adapter_vertex.models import CLAUDE_CATALOG, publisher, vertex_model
from faregate_adapter_vertex.names import (
    ANTHROPIC,
    ANTHROPIC_FORMAT,
    GEMINI_FORMAT,
    GENERATE,
    GLOBAL,
    GLOBAL_HOST,
    GOOGLE,
    RAW_PREDICT,
    REGIONAL_HOST,
    STREAM_GENERATE,
    STREAM_RAW_PREDICT,
    VERTEX_CHANNEL_TYPE,
)
from faregate_adapter_vertex.streams import VertexStreamParser
from faregate_adapter_vertex.tokens import TokenCache

if TYPE_CHECKING:
    from faregate_adapter_vertex.testing.fake import FakeVertex

JSON = "application/json"
VERTEX_MODELS = (*(m for m in GEMINI_MODELS if "embedding" not in m), *CLAUDE_CATALOG)


class VertexProvider(HttpJsonProvider):
    name = "vertex"
    channel_types = (VERTEX_CHANNEL_TYPE,)
    model_catalog = MappingProxyType({VERTEX_CHANNEL_TYPE: VERTEX_MODELS})
    default_base_url = ""  # by region: GLOBAL_HOST or REGIONAL_HOST

    def __init__(self, services: Services) -> None:
        self.tokens = TokenCache(lambda: services.upstream)

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeVertex:
        """The fake Vertex AI (:mod:`faregate_adapter_vertex.testing`), taking ``api_key`` as
        its (express mode) API key."""
        from faregate_adapter_vertex.testing.fake import FakeVertex

        return FakeVertex(host, port, api_key=api_key, validate_requests=False)

    def native_format_for(self, target: UpstreamTarget) -> str | None:
        return ANTHROPIC_FORMAT if publisher(target.model) == ANTHROPIC else GEMINI_FORMAT

    def check_key(self, key: str, other: str, settings: Mapping[str, Any]) -> str | None:
        return key_problem(key, other, settings)

    async def prepare_credential(self, target: UpstreamTarget) -> str:
        """A service account's access token (cached, refreshed before it expires); an API
        key as it is."""
        try:
            if key_type(target.key, target.settings) == "api_key":
                return target.key.strip()
            account = service_account(target.key)
        except KeyProblem as exc:
            raise channel_error(str(exc)) from None
        proxy = target.settings.get("proxy") if target.settings else None
        return await self.tokens.token(target.key, account, proxy if isinstance(proxy, str) else "")

    # ---- requests -----------------------------------------------------------------------
    def _auth(self, target: UpstreamTarget) -> tuple[dict[str, str], str | None]:
        """The credential headers and the project of a call (``target.key`` is what
        :meth:`prepare_credential` made of the channel key)."""
        project = self.tokens.project_of(target.key)
        if project is not None:
            return {"Authorization": f"Bearer {target.key}", "x-goog-user-project": project}, project
        chosen = target.settings.get("vertex_project") if target.settings else None
        return {"x-goog-api-key": target.key}, chosen if isinstance(chosen, str) and chosen else None

    def _call(self, target: UpstreamTarget, action: str, body: bytes, *, sse: bool) -> UpstreamRequest:
        headers, project = self._auth(target)
        region = region_for(target.other, target.model)
        host = target.base_url or (GLOBAL_HOST if region == GLOBAL else REGIONAL_HOST.format(region=region))
        who = publisher(target.model)
        model = quote(vertex_model(target.model) if who == ANTHROPIC else target.model.removeprefix("models/"),
                      safe="-._~@")
        if project is not None:
            path = f"/v1/projects/{project}/locations/{region}/publishers/{who}/models/{model}:{action}"
        elif who == GOOGLE:  # an API key of express mode: Google's models only, no project
            path = f"/v1/publishers/google/models/{model}:{action}"
        else:
            raise channel_error("Claude models need a service account (vertex_key_type json) or, with an API key, "
                                "the setting vertex_project")
        headers |= {"Content-Type": JSON, "Accept": "text/event-stream" if sse or action == STREAM_RAW_PREDICT
                    else JSON}
        beta = target.client_headers.get("anthropic-beta") if who == ANTHROPIC else None
        if beta:
            headers["anthropic-beta"] = beta
        url = join_url(host, path) + ("?alt=sse" if sse else "")
        return UpstreamRequest("POST", url, headers, body)

    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        if publisher(target.model) == GOOGLE:
            body = gemini_requests.render_request(request, target.model, target.settings)
            return without_call_ids(body) or body
        default_max = target.settings.get("default_max_tokens") if target.settings else None
        if not isinstance(default_max, int) or isinstance(default_max, bool) or default_max < 1:
            default_max = anthropic_requests.DEFAULT_MAX_TOKENS
        return anthropic_body(anthropic_requests.render_request(request, target.model, default_max), target.stream)

    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest:
        body = json_dumps(self.render_request(request, target))
        if publisher(target.model) == GOOGLE:
            return self._call(target, STREAM_GENERATE if target.stream else GENERATE, body, sse=target.stream)
        return self._call(target, STREAM_RAW_PREDICT if target.stream else RAW_PREDICT, body, sse=False)

    def build_passthrough(self, body: dict[str, Any], raw: bytes, target: UpstreamTarget,
                          summary: RequestSummary) -> UpstreamRequest:
        """A Gemini client's bytes (without the function-call ids Vertex does not take), in
        the framing it asked for; an Anthropic client's body as Vertex takes it."""
        if publisher(target.model) == ANTHROPIC:
            action = STREAM_RAW_PREDICT if target.stream else RAW_PREDICT
            return self._call(target, action, json_dumps(anthropic_body(body, target.stream)), sse=False)
        native = summary if isinstance(summary, GeminiSummary) else GeminiSummary(model=summary.model)
        stripped = without_call_ids(body)
        return self._call(target, native.action, raw if stripped is None else json_dumps(stripped),
                          sse=summary.stream and native.sse)

    # ---- answers ------------------------------------------------------------------------
    def read_response(self, obj: Any) -> ChatResponse:
        if isinstance(obj, dict) and obj.get("type") == "message":
            return anthropic_responses.parse_response(obj)
        return gemini_responses.parse_response(obj)

    def read_usage(self, obj: Any) -> Usage | None:
        if isinstance(obj, dict) and obj.get("type") == "message" and isinstance(obj.get("content"), list):
            return anthropic_responses.parse_usage(obj.get("usage"))
        if not gemini_responses.is_response(obj):
            raise ValueError("neither a Messages nor a GenerateContentResponse")
        return gemini_responses.parse_usage(obj.get("usageMetadata"))

    def stream_parser(self) -> StreamParser:
        return VertexStreamParser()

    def passthrough_stream(self, summary: RequestSummary) -> PassthroughStream:
        if isinstance(summary, GeminiSummary):
            return gemini_streams.GeminiPassthrough(sse=summary.sse, candidates=summary.candidates)
        return AnthropicPassthrough()

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        """Google's error shape (Gemini models, and anything Vertex itself refuses), or
        Anthropic's (what a Claude model answers)."""
        try:
            obj = json_loads(body)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and obj.get("type") == "error":
            err = upstream_error(status, body)
            if err.code is None:
                err.code = err.type
            return err
        return gemini_errors.parse_error(status, body)

    # ---- model lists --------------------------------------------------------------------
    def models_request(self, target: UpstreamTarget) -> UpstreamRequest | None:
        """Google's publisher models (Model Garden, ``v1beta1``), with a service account's
        token; an API key (express mode) lists none. Claude's names come from the catalog."""
        headers, project = self._auth(target)
        if project is None or "Authorization" not in headers:
            return None
        url = join_url(target.base_url or GLOBAL_HOST, "/v1beta1/publishers/google/models") + "?pageSize=1000"
        return UpstreamRequest("GET", url, headers)

    def parse_models(self, body: bytes) -> list[str]:
        """``{"publisherModels": [{"name": "publishers/google/models/…"}, …]}``."""
        try:
            found = json_loads(body).get("publisherModels") or []
        except (ValueError, AttributeError):
            raise malformed_response() from None
        if not isinstance(found, list):
            raise malformed_response()
        names = [m.get("name") for m in found if isinstance(m, dict)]
        return [name.rsplit("/", 1)[-1] for name in names if isinstance(name, str)]
