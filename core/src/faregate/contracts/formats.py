"""Inbound formats (the wire formats clients speak) and their stream encoders."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

from faregate.canonical import ChatRequest, ChatResponse, StreamEvent, Usage
from faregate.contracts.inbound import InboundRequest
from faregate.contracts.values import ModelInfo, RequestSummary, Route, TokenCount
from faregate.errors import GatewayError, RateLimitInfo
from faregate.principals import bearer_token


class StreamEncoder(ABC):
    """Turns canonical stream events into the client's wire bytes. Stateful: one per
    response."""

    @abstractmethod
    def encode(self, event: StreamEvent) -> bytes: ...

    @abstractmethod
    def finish(self, usage: Usage | None) -> bytes:
        """Bytes that close the stream (e.g. OpenAI's usage chunk and ``[DONE]``)."""

    @abstractmethod
    def error(self, err: GatewayError) -> bytes:
        """An in-band error event, for failures after the first byte was sent."""


class InboundFormat(ABC):
    """A wire format clients speak to the gateway (e.g. ``openai.chat``): its routes,
    where its clients put the key, how its requests, answers and errors look."""

    name: str
    #: media type of a streamed response
    stream_content_type: str = "text/event-stream"
    #: path prefixes only this format's clients call (``/v1/messages``): a path under one
    #: that no route serves is answered in this format's error shape (:meth:`claims_path`)
    path_prefixes: tuple[str, ...] = ()

    @abstractmethod
    def routes(self) -> list[Route]: ...

    def api_key(self, request: InboundRequest) -> str | None:
        """Where this format's clients put the key. Default: ``Authorization: Bearer``."""
        return bearer_token(request.headers)

    @abstractmethod
    def summarize(self, body: dict[str, Any], request: InboundRequest) -> RequestSummary:
        """Read model, stream flag and size hints; raise ``GatewayError`` 400 on bad input.
        ``request`` carries what the body does not (path parameters, query, route options)."""

    @abstractmethod
    def parse(self, body: dict[str, Any], summary: RequestSummary) -> ChatRequest:
        """The body in the canonical model (only when converting for another format's
        channel); its ``model`` is ``summary.model``."""

    @abstractmethod
    def render_response(self, response: ChatResponse, requested_model: str) -> dict[str, Any]: ...

    def render_reply(self, response: ChatResponse, summary: RequestSummary) -> dict[str, Any]:
        """A converted answer to the request ``summary`` describes. Default:
        :meth:`render_response` for the requested model; a format whose answers echo the
        request's parameters (OpenAI Responses) overrides it and reads them from its own
        :class:`RequestSummary` subclass."""
        return self.render_response(response, summary.model)

    @abstractmethod
    def stream_encoder(self, summary: RequestSummary, request_id: str) -> StreamEncoder: ...

    def add_system_prompt(self, body: dict[str, Any], prompt: str,
                          override: bool) -> tuple[dict[str, Any], bool] | None:
        """A channel's system prompt in a request passed through in this format (new-api's
        channel setting ``system_prompt``): first when ``body`` has none; before its own
        (newline-joined) when ``override``. Returns a new body (``body`` stays as it is)
        and whether the request's own system prompt changed; None (the default) when the
        format has no system prompt (the body is sent as it is)."""
        return None

    def add_output_cap(self, body: dict[str, Any], tokens: int) -> dict[str, Any] | None:
        """A request passed through in this format, bounded to ``tokens`` output tokens per
        answer: the bound admission reserved for a request whose client set none
        (:attr:`RequestSummary.output_cap`), written where this format says it (OpenAI's
        ``max_completion_tokens``, Gemini's ``generationConfig.maxOutputTokens`` …). Returns a
        new body (``body`` stays as it is); None (the default) when the format has no such
        field, whose summaries then leave ``sends_output_cap`` False."""
        return None

    @abstractmethod
    def render_error(self, err: GatewayError, request_id: str) -> tuple[int, bytes]:
        """The format's error body and status for ``err``: the one renderer of this
        format's errors (relay, model lists, token counting, body limits)."""

    def rate_limit_headers(self, limit: RateLimitInfo) -> dict[str, str]:
        """The headers of a rate limit's 429 in this format, so the vendor's SDK reads them.
        Default: OpenAI's ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` (reset as a
        duration, ``"1s"``, ``"6m0s"``), which most OpenAI-compatible clients read."""
        return openai_rate_limit_headers(limit)

    def claims_path(self, path: str) -> bool:
        """True when ``path``, which no route serves, is one only this format's clients
        call: by default, one under :attr:`path_prefixes`."""
        return bool(self.path_prefixes) and path.startswith(self.path_prefixes)

    # model lists ---------------------------------------------------------------
    def claims_model_list(self, request: InboundRequest) -> bool:
        """True when a request on a path several formats share (``GET /v1/models``, an
        unknown path under ``/v1/``) is in this format, by its headers or query."""
        return False

    def render_model_list(self, models: list[ModelInfo], request: InboundRequest) -> dict[str, Any] | None:
        return None

    def render_model(self, model: ModelInfo) -> dict[str, Any] | None:
        return None

    # token counting --------------------------------------------------------------
    def count_tokens(self, body: dict[str, Any], request: InboundRequest) -> TokenCount:
        """Validate a token-counting request and estimate its input (routes of kind
        ``count_tokens``); raise ``GatewayError`` 400 on bad input."""
        raise GatewayError(404, f"{self.name} has no token counting", code="not_found")

    def render_token_count(self, count: TokenCount) -> dict[str, Any]:
        return {"input_tokens": count.input_tokens}


def _duration(seconds: float) -> str:
    """OpenAI's reset duration: ``"20ms"``, ``"1s"``, ``"6m0s"``, ``"1h2m3s"``."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    whole = math.ceil(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def openai_rate_limit_headers(limit: RateLimitInfo) -> dict[str, str]:
    headers: dict[str, str] = {}
    for kind, total, left, reset in (("requests", limit.requests_limit, limit.requests_remaining,
                                      limit.requests_reset),
                                     ("tokens", limit.tokens_limit, limit.tokens_remaining, limit.tokens_reset)):
        if total is None:
            continue
        headers[f"x-ratelimit-limit-{kind}"] = str(total)
        headers[f"x-ratelimit-remaining-{kind}"] = str(max(0, left or 0))
        headers[f"x-ratelimit-reset-{kind}"] = _duration(reset or 0.0)
    return headers
