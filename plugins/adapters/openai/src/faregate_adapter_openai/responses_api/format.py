"""The inbound format ``openai.responses``: OpenAI SDK clients' ``client.responses.create``
(``POST /v1/responses``) and ``client.responses.compact`` (``POST /v1/responses/compact``).
Errors are OpenAI's (``{"error": {...}}``; in a stream, an ``error`` event)."""

from __future__ import annotations

from typing import Any

from faregate.api import (
    ChatRequest,
    ChatResponse,
    GatewayError,
    InboundFormat,
    InboundRequest,
    RequestSummary,
    Route,
    StreamEncoder,
    json_dumps,
)
from faregate_adapter_openai import errors
from faregate_adapter_openai.responses_api import render, requests
from faregate_adapter_openai.responses_api.compact import COMPACT
from faregate_adapter_openai.responses_api.native import RESPONSES
from faregate_adapter_openai.responses_api.stream import ResponsesStreamEncoder
from faregate_adapter_openai.responses_api.summary import ResponsesSummary, summarize

FORMAT_NAME = "openai.responses"
#: the body cap of both routes, in MiB: OpenAI takes up to 50 MB of images and files in one
#: request, as base64 data URIs, beside the conversation's text
MAX_BODY_MB = 64.0


class OpenAIResponsesFormat(InboundFormat):
    name = FORMAT_NAME

    def routes(self) -> list[Route]:
        return [Route("POST", "/v1/responses", kind=RESPONSES, max_body_mb=MAX_BODY_MB),
                Route("POST", "/v1/responses/compact", kind=COMPACT, max_body_mb=MAX_BODY_MB)]

    def summarize(self, body: dict[str, Any], request: InboundRequest) -> RequestSummary:
        return summarize(body)

    def parse(self, body: dict[str, Any], summary: RequestSummary) -> ChatRequest:
        return requests.parse_request(body, summary.model)

    def render_response(self, response: ChatResponse, requested_model: str) -> dict[str, Any]:
        return render.render_response(response, requested_model, {})

    def render_reply(self, response: ChatResponse, summary: RequestSummary) -> dict[str, Any]:
        params = summary.params if isinstance(summary, ResponsesSummary) else {}
        return render.render_response(response, summary.model, params)

    def stream_encoder(self, summary: RequestSummary, request_id: str) -> StreamEncoder:
        return ResponsesStreamEncoder(summary, request_id)

    def add_system_prompt(self, body: dict[str, Any], prompt: str,
                          override: bool) -> tuple[dict[str, Any], bool] | None:
        """The Responses API's system prompt is ``instructions``."""
        own = body.get("instructions")
        if not isinstance(own, str) or not own:
            return {**body, "instructions": prompt}, False
        if not override:
            return None
        return {**body, "instructions": f"{prompt}\n{own}"}, True

    def add_output_cap(self, body: dict[str, Any], tokens: int) -> dict[str, Any] | None:
        """``max_output_tokens`` (a ``null`` one replaced)."""
        return {**body, "max_output_tokens": tokens}

    def render_error(self, err: GatewayError, request_id: str) -> tuple[int, bytes]:
        return err.status, json_dumps(errors.error_body(err, f"{err.message} (request id: {request_id})"))

