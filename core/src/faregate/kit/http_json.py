"""A provider for upstreams that take a JSON body over HTTP (most vendors): URLs,
authentication header, JSON bodies, malformed answers, errors and model lists from a
few declarations. A subclass writes the conversions (``render_request``,
``read_response``) and its stream reading (``stream_parser``, ``passthrough_stream``)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from faregate import jsonutil
from faregate.canonical import ChatRequest, ChatResponse, Usage
from faregate.contracts import Provider, RequestSummary, UpstreamRequest, UpstreamTarget
from faregate.errors import GatewayError, upstream_error
from faregate.framing import Framing

#: exceptions a conversion raises on a body of the wrong shape
SHAPE_ERRORS = (jsonutil.JSONDecodeError, ValueError, TypeError, AttributeError, KeyError, IndexError)


def join_url(base_url: str, path: str) -> str:
    """``path`` (e.g. ``/v1/chat/completions``) under an admin's ``base_url``; a base that
    already ends with the path's first segment (``https://host/v1``) does not get it
    twice, and trailing slashes do not double."""
    base = base_url.rstrip("/")
    first, _, rest = path.lstrip("/").partition("/")
    if rest and base.endswith("/" + first):
        return f"{base}/{rest}"
    return base + path


def malformed_response() -> GatewayError:
    """What a provider raises on an upstream 200 whose body it cannot read."""
    return GatewayError(502, "upstream returned a malformed response", code="bad_response_body", upstream=True)


class HttpJsonProvider(Provider):
    #: where chat requests go, under the channel's base URL
    chat_path: str = "/v1/chat/completions"
    #: where the upstream lists its models (None: it cannot)
    models_path: str | None = "/v1/models"
    #: query string of the model list request (e.g. ``limit=1000``)
    models_query: str = ""
    #: how the channel key is sent: ``{auth_header}: {auth_prefix}{key}``
    auth_header: str = "Authorization"
    auth_prefix: str = "Bearer "

    # ---- requests ---------------------------------------------------------------------
    def url(self, target: UpstreamTarget, path: str) -> str:
        return join_url(target.base_url, path)

    def auth_headers(self, target: UpstreamTarget) -> dict[str, str]:
        return {self.auth_header: self.auth_prefix + target.key}

    def headers(self, target: UpstreamTarget) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **self.auth_headers(target)}
        if target.stream and self.stream_framing is Framing.SSE:
            headers["Accept"] = "text/event-stream"
        return headers

    @abstractmethod
    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        """The canonical request as the vendor's JSON body (``target.model`` as its model)."""

    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest:
        body = jsonutil.dumps(self.render_request(request, target))
        return UpstreamRequest("POST", self.url(target, self.chat_path), self.headers(target), body)

    def passthrough_body(self, body: dict[str, Any], target: UpstreamTarget,
                         summary: RequestSummary) -> dict[str, Any] | None:
        """The client's body with the changes the gateway must make, or None to send the
        client's bytes untouched. Default: the channel's model mapping."""
        if target.model != summary.model:
            return {**body, "model": target.model}
        return None

    def build_passthrough(self, body: dict[str, Any], raw: bytes, target: UpstreamTarget,
                          summary: RequestSummary) -> UpstreamRequest:
        changed = self.passthrough_body(body, target, summary)
        payload = raw if changed is None else jsonutil.dumps(changed)
        return UpstreamRequest("POST", self.url(target, self.chat_path), self.headers(target), payload)

    # ---- answers ----------------------------------------------------------------------
    @abstractmethod
    def read_response(self, obj: Any) -> ChatResponse:
        """The vendor's response JSON in the canonical model; raise ``ValueError`` (or
        ``TypeError``, ``KeyError`` …) when it is not one."""

    def read_usage(self, obj: Any) -> Usage | None:
        """Usage of a same-format response, read without converting it; raise
        ``ValueError`` when ``obj`` is not a response."""
        return self.read_response(obj).usage

    def parse_response(self, body: bytes) -> ChatResponse:
        try:
            return self.read_response(jsonutil.loads(body))
        except SHAPE_ERRORS:
            raise malformed_response() from None

    def passthrough_usage(self, body: bytes) -> Usage | None:
        try:
            return self.read_usage(jsonutil.loads(body))
        except SHAPE_ERRORS:
            raise malformed_response() from None

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        return upstream_error(status, body)

    # ---- model lists ------------------------------------------------------------------
    def models_request(self, target: UpstreamTarget) -> UpstreamRequest | None:
        if self.models_path is None:
            return None
        url = self.url(target, self.models_path) + (f"?{self.models_query}" if self.models_query else "")
        return UpstreamRequest("GET", url, self.auth_headers(target))

    def parse_models(self, body: bytes) -> list[str]:
        """``{"data": [{"id": …}, …]}``, the shape OpenAI and Anthropic share."""
        try:
            data = jsonutil.loads(body).get("data") or []
        except SHAPE_ERRORS:
            raise malformed_response() from None
        return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]
