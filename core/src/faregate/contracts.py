"""The objects plugins hand to the core through ``register_*`` hooks.

Hooks are synchronous and run once at start; what they register are these objects,
whose methods the relay calls directly on the hot path (a pluggy call per request
costs tens of microseconds). Methods documented as "may be async" are awaited with
:func:`faregate.hooks.await_me_maybe`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from faregate.canonical import ChatRequest, ChatResponse, StreamEvent, Usage
from faregate.errors import GatewayError

# ---- shared value types ---------------------------------------------------------------


@dataclass(slots=True)
class Route:
    """A relay route an inbound format serves. ``kind`` tells the core which pipeline
    runs it: ``chat`` (the generic relay) or ``count_tokens``."""

    method: str
    path: str
    kind: str = "chat"


@dataclass(slots=True)
class RequestSummary:
    """What the core needs from a client body without converting it."""

    model: str
    stream: bool = False
    max_tokens: int | None = None
    include_usage: bool = False
    prompt_chars: int = 0


@dataclass(slots=True)
class UpstreamTarget:
    """Where and how to call one channel for one attempt."""

    base_url: str
    key: str
    model: str  # the upstream model name (after model mapping)
    stream: bool
    channel_type: int
    other: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    client_headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class UpstreamRequest:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None = None


@dataclass(slots=True)
class ModelInfo:
    id: str
    owned_by: str = "faregate"
    created: int = 0


# ---- inbound formats --------------------------------------------------------------------


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
    """A wire format clients speak to the gateway (e.g. ``openai.chat``)."""

    name: str
    #: media type of a streamed response
    stream_content_type: str = "text/event-stream"

    @abstractmethod
    def routes(self) -> list[Route]: ...

    def api_key(self, headers: Mapping[str, str], args: Mapping[str, str]) -> str | None:
        """Where this format's clients put the key. Default: ``Authorization: Bearer``."""
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            return auth[7:].strip()
        return None

    @abstractmethod
    def summarize(self, body: dict[str, Any]) -> RequestSummary:
        """Read model, stream flag and size hints; raise ``GatewayError`` 400 on bad input."""

    @abstractmethod
    def parse(self, body: dict[str, Any]) -> ChatRequest: ...

    @abstractmethod
    def render_response(self, response: ChatResponse, requested_model: str) -> dict[str, Any]: ...

    @abstractmethod
    def stream_encoder(self, summary: RequestSummary, request_id: str) -> StreamEncoder: ...

    @abstractmethod
    def render_error(self, err: GatewayError, request_id: str) -> tuple[int, bytes]: ...

    # model lists ---------------------------------------------------------------
    def claims_model_list(self, headers: Mapping[str, str], args: Mapping[str, str]) -> bool:
        """True when a ``GET /v1/models`` request is in this format (by its headers)."""
        return False

    def render_model_list(self, models: list[ModelInfo]) -> dict[str, Any] | None:
        return None

    def render_model(self, model: ModelInfo) -> dict[str, Any] | None:
        return None


# ---- providers (channel types) ------------------------------------------------------------


class StreamParser(ABC):
    """Turns one upstream SSE event into canonical events. Stateful: one per stream.
    ``feed`` may raise ``ValueError``/``TypeError`` (a JSON error included) on a
    malformed event: the core ends the stream with an in-band ``bad_response_body``."""

    @abstractmethod
    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]: ...

    done: bool = False  # the upstream said the stream is complete


class PassthroughStream(ABC):
    """For same-format streams: decides per upstream SSE event whether its raw bytes
    go to the client, and reads usage on the side."""

    usage: Usage | None = None
    done: bool = False
    error: GatewayError | None = None
    output_chars: int = 0

    @abstractmethod
    def feed(self, event: str | None, data: bytes) -> bool:
        """Return True to forward this event's bytes unchanged."""

    def trailer(self) -> bytes:
        """Bytes to send after the last event (nothing by default)."""
        return b""


class Provider(ABC):
    """A channel type: how to call one kind of upstream and read what comes back.
    Pure functions of their inputs; the core does the I/O."""

    name: str
    channel_types: tuple[int, ...]
    native_format: str | None = None
    default_base_url: str = ""

    @abstractmethod
    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest: ...

    def build_passthrough(self, body: dict[str, Any], raw: bytes, target: UpstreamTarget,
                          summary: RequestSummary) -> UpstreamRequest:
        """Same-format request: forward ``raw`` with only the changes the gateway must make."""
        raise NotImplementedError

    @abstractmethod
    def parse_response(self, body: bytes) -> ChatResponse: ...

    @abstractmethod
    def stream_parser(self) -> StreamParser: ...

    def passthrough_stream(self, summary: RequestSummary) -> PassthroughStream:
        raise NotImplementedError

    def passthrough_usage(self, body: bytes) -> Usage | None:
        """Usage of a same-format regular response, read without converting it."""
        return self.parse_response(body).usage

    @abstractmethod
    def parse_error(self, status: int, body: bytes) -> GatewayError: ...

    def models_request(self, target: UpstreamTarget) -> UpstreamRequest | None:
        return None

    def parse_models(self, body: bytes) -> list[str]:
        return []


# ---- policy objects ------------------------------------------------------------------------


class RequestRewriter(Protocol):
    """``rewrite(ctx)`` may change ``ctx.canonical``/``ctx.body`` before the upstream call.
    May be async."""

    def rewrite(self, ctx: Any) -> Any: ...


class ChannelFilter(Protocol):
    """``filter(candidates, ctx)`` returns the channels still allowed (sync)."""

    def filter(self, candidates: list[Any], ctx: Any) -> list[Any]: ...


class ChannelSelector(Protocol):
    """``select(candidates, ctx)`` returns one channel or None (sync; hot path)."""

    def select(self, candidates: list[Any], ctx: Any) -> Any | None: ...


class Authenticator(Protocol):
    """``kind`` is ``api_key``, ``session`` or ``access_token``; ``authenticate(request)``
    returns a principal or None. May be async."""

    kind: str

    def authenticate(self, request: Any) -> Any: ...


class QuotaCheck(Protocol):
    """``check(ctx, estimate)`` returns None to allow or a ``GatewayError`` to deny.
    May be async."""

    def check(self, ctx: Any, estimate: int) -> Any: ...


class Pricer(Protocol):
    """``price(ctx, usage)`` returns a :class:`faregate.relay.pricing.Price` or None to
    let the next pricer decide (sync; hot path)."""

    def price(self, ctx: Any, usage: Usage | None) -> Any: ...


class UsageRecorder(Protocol):
    """``record(entry)`` receives every finished request's log entry. May be async;
    errors are logged, never propagated."""

    def record(self, entry: Any) -> Any: ...


class PaymentProvider(Protocol):
    """A payment gateway. ``name`` plus async ``create_checkout`` and
    ``parse_webhook``; its webhook routes come through ``register_routes``."""

    name: str


@dataclass(slots=True)
class StorageBackend:
    """A database engine: ``name`` chosen by ``FAREGATE_DB_URL``'s scheme(s)."""

    name: str
    schemes: tuple[str, ...]
    description: str = ""

    def tortoise_connection(self, url: str) -> dict[str, Any] | str:
        """The tortoise connection config for ``url``; defaults to the URL itself."""
        return url
