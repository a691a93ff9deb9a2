"""The inbound format ``gemini.generate_content``: what Gemini SDK clients speak, under
``/v1beta/models/{model}:{action}`` and ``/v1/models/{model}:{action}`` (the Python SDK
defaults to ``v1``, the Node one to ``v1beta``), with the native model lists."""

from __future__ import annotations

from typing import Any

from faregate.api import (
    ChatRequest,
    ChatResponse,
    GatewayError,
    InboundFormat,
    InboundRequest,
    ModelInfo,
    RateLimitInfo,
    RequestSummary,
    Route,
    StreamEncoder,
    TokenCount,
    bearer_token,
)
from faregate_adapter_gemini import errors, model_list, requests, responses, streams, summary
from faregate_adapter_gemini.names import (
    BATCH_EMBED,
    CLIENT_VERSIONS,
    COUNT_TOKENS,
    EMBED,
    EMBED_KIND,
    FORMAT_NAME,
    GENERATE,
    GENERATE_KIND,
    STREAM_GENERATE,
    UNSERVED_KIND,
)
from faregate_adapter_gemini.summary import GeminiSummary

#: where Gemini clients put the key (``x-vendor-api-key``: the spec's neutral alias)
KEY_HEADERS = ("x-goog-api-key", "x-vendor-api-key")
KEY_QUERY = "key"
#: the route option of ``GET /v1beta/openai/models``: the chat-completions shape
OPENAI_LIST = "openai"
_KINDS = {GENERATE: GENERATE_KIND, STREAM_GENERATE: GENERATE_KIND, EMBED: EMBED_KIND, BATCH_EMBED: EMBED_KIND,
          COUNT_TOKENS: "count_tokens"}


def routes() -> list[Route]:
    found = [Route("POST", f"/{version}/models/{{model}}:{action}", kind=kind, options={"action": action})
             for version in CLIENT_VERSIONS for action, kind in _KINDS.items()]
    # every other action (batchGenerateContent, predict …): the router prefers the routes above
    found += [Route("POST", f"/{version}/models/{{model}}:{{action}}", kind=UNSERVED_KIND)
              for version in CLIENT_VERSIONS]
    found += [Route("GET", "/v1beta/models", kind="models"), Route("GET", "/v1beta/models/{model}", kind="model"),
              Route("GET", "/v1beta/openai/models", kind="models", options={"list": OPENAI_LIST})]
    return found


class GeminiFormat(InboundFormat):
    name = FORMAT_NAME
    #: an unknown path here (``/v1beta/cachedContents``, a file upload) is answered in Google's error shape
    path_prefixes = ("/v1beta/", "/upload/v1beta/")

    def routes(self) -> list[Route]:
        return routes()

    def api_key(self, request: InboundRequest) -> str | None:
        """``x-goog-api-key`` (or its alias), ``?key=``, or ``Authorization: Bearer``."""
        for header in KEY_HEADERS:
            value = request.headers.get(header)
            if value and value.strip():
                return value.strip()
        value = request.query.get(KEY_QUERY)
        if value and value.strip():
            return value.strip()
        return bearer_token(request.headers)

    def summarize(self, body: dict[str, Any], request: InboundRequest) -> GeminiSummary:
        return summary.summarize_generate(body, request)

    def parse(self, body: dict[str, Any], summary: RequestSummary) -> ChatRequest:
        return requests.parse_request(body, summary.model, summary.stream)

    def render_response(self, response: ChatResponse, requested_model: str) -> dict[str, Any]:
        return responses.render_response(response, requested_model, show_thoughts=False)

    def render_reply(self, response: ChatResponse, summary: RequestSummary) -> dict[str, Any]:
        shown = isinstance(summary, GeminiSummary) and summary.include_thoughts
        return responses.render_response(response, summary.model, show_thoughts=shown)

    def stream_encoder(self, summary: RequestSummary, request_id: str) -> StreamEncoder:
        native = summary if isinstance(summary, GeminiSummary) else GeminiSummary(model=summary.model)
        return streams.GeminiStreamEncoder(summary.model, request_id, sse=native.sse,
                                           show_thoughts=native.include_thoughts)

    def add_system_prompt(self, body: dict[str, Any], prompt: str,
                          override: bool) -> tuple[dict[str, Any], bool] | None:
        """Gemini's ``systemInstruction`` (``system_instruction`` too): the channel's text
        as its first part."""
        name = "system_instruction" if "system_instruction" in body else "systemInstruction"
        own = body.get(name)
        parts = own.get("parts") if isinstance(own, dict) else None
        if not isinstance(parts, list) or not parts:
            return {**body, name: {"parts": [{"text": prompt}]}}, False
        if not override:
            return None
        assert isinstance(own, dict)
        return {**body, name: {**own, "parts": [{"text": prompt}, *parts]}}, True

    def add_output_cap(self, body: dict[str, Any], tokens: int) -> dict[str, Any] | None:
        """``generationConfig.maxOutputTokens`` (under the spelling the body uses: Google reads
        ``generation_config`` / ``max_output_tokens`` too)."""
        name = "generation_config" if "generation_config" in body else "generationConfig"
        config = body.get(name)
        config = {k: v for k, v in config.items() if k not in ("maxOutputTokens", "max_output_tokens")} \
            if isinstance(config, dict) else {}
        return {**body, name: {**config, "maxOutputTokens": tokens}}

    def rate_limit_headers(self, limit: RateLimitInfo) -> dict[str, str]:
        """None: Gemini's clients read a rate limit from the body's ``RESOURCE_EXHAUSTED``
        status (and ``Retry-After``), not from headers."""
        return {}

    def render_error(self, err: GatewayError, request_id: str) -> tuple[int, bytes]:
        return errors.render_error(err, request_id)

    # token counting ----------------------------------------------------------------------
    def count_tokens(self, body: dict[str, Any], request: InboundRequest) -> TokenCount:
        return summary.count_tokens(body, request)

    def render_token_count(self, count: TokenCount) -> dict[str, Any]:
        return {"totalTokens": count.input_tokens}

    # model lists -------------------------------------------------------------------------
    def claims_model_list(self, request: InboundRequest) -> bool:
        """The shared ``GET /v1/models`` is Gemini's when the caller uses its key header or ``?key=``."""
        return any(request.headers.get(h) for h in KEY_HEADERS) or bool(request.query.get(KEY_QUERY))

    def render_model_list(self, models: list[ModelInfo], request: InboundRequest) -> dict[str, Any]:
        if request.route.options.get("list") == OPENAI_LIST:
            return model_list.render_openai_list(models)
        return model_list.render_native_list(models, request.query)

    def render_model(self, model: ModelInfo) -> dict[str, Any]:
        return model_list.render_model(model)
