"""The objects plugins hand to the core through ``register_*`` hooks.

The ``register_*`` hooks are synchronous and run once at start; what they register
are these objects, whose methods the core calls directly on the hot path (a pluggy
call per request costs tens of microseconds). Methods documented as "may be async"
are awaited with :func:`faregate.hooks.await_me_maybe` (a usage recorder's coroutine
by the ledger). Plugins import all of this through :mod:`faregate.api`.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Mapping, MutableMapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from faregate.billing.pricing import no_ratios
from faregate.canonical import ChatRequest, ChatResponse, StreamEvent, Usage
from faregate.errors import GatewayError
from faregate.framing import Framing
from faregate.payments.contract import PaymentProvider as PaymentProvider  # a payment gateway

if TYPE_CHECKING:
    from faregate.billing.ledger import LogEntry
    from faregate.billing.pricing import Price
    from faregate.exchange.exchange import Exchange
    from faregate.exchange.inbound import InboundRequest, Outcome
    from faregate.principals import AuthRequest, Principal
    from faregate.state.snapshot import ChannelEntry

# ---- shared value types ---------------------------------------------------------------

WEBSOCKET = "WEBSOCKET"  # Route.method of a WebSocket route


@dataclass(slots=True, frozen=True)
class Route:
    """A route an inbound format serves.

    ``path`` uses ``{name}`` for a path parameter (``{name:path}`` lets it contain
    slashes); the edge hands the values to the endpoint in
    :attr:`InboundRequest.path_params`. ``kind`` names the endpoint driver that runs
    it (``chat``, ``count_tokens``, ``models``, ``model``, … see
    ``register_endpoint_drivers``). ``options`` are constants the format reads back
    per request (e.g. ``{"stream": True}`` for a streaming-only path); the core reads
    one, ``{"auth": "session"}`` (see :attr:`login_session`).
    ``method`` is an HTTP method, or ``WEBSOCKET``. ``max_body_mb`` caps this route's
    body below the gateway's ``max_body_mb`` (an audio upload's 25 MB, say): a larger
    declared length is refused before a byte is read; None keeps the gateway's cap."""

    method: str
    path: str
    kind: str = "chat"
    options: Mapping[str, Any] = field(default_factory=dict)
    max_body_mb: float | None = None

    @property
    def login_session(self) -> bool:
        """A route for the logged-in user instead of an API key (new-api's playground): the
        edge hands it the login session and admission takes that alone (with
        ``New-Api-User``), never an API key or access token. Read when the edge installs it."""
        return self.options.get("auth") == "session"


@dataclass(slots=True)
class RequestSummary:
    """What the core needs from a client request without converting it.

    ``prompt_tokens`` is the format's estimate of the whole input (system text,
    messages, tools, images) made with the shared estimator
    (:data:`faregate.tokens.estimator`); it sizes the reservation and bills a reply
    whose upstream reported no usage. ``other_ratios`` multiply the request's price
    (new-api's other ratios: an image request's ``n``, ``size`` and ``quality``, seconds
    of audio …); they are logged by name."""

    model: str
    stream: bool = False
    max_tokens: int | None = None
    include_usage: bool = False
    prompt_tokens: int = 0
    other_ratios: Mapping[str, float] = field(default_factory=no_ratios)


@dataclass(slots=True)
class TokenCount:
    """A counted request (``count_tokens`` endpoints): its model and input tokens."""

    model: str
    input_tokens: int


@dataclass(slots=True)
class UpstreamTarget:
    """Where and how to call one channel for one attempt. ``model`` is the upstream
    model name (after model mapping and rewriters): providers name no other."""

    base_url: str
    key: str
    model: str
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


#: what the core hands to :attr:`Provider.fetch_balance`: ``await fetch(request)`` sends one
#: request through the core's upstream client and returns the body of a 200 answer (bounded in
#: size and time); any other answer or a failed connection raises a ``GatewayError`` whose
#: message is already redacted (no channel key in it)
BalanceFetch = Callable[[UpstreamRequest], Awaitable[bytes]]


@dataclass(frozen=True, slots=True)
class ChannelProbe:
    """One channel test of an endpoint kind (the admin's ``GET /api/channel/test/{id}``,
    :meth:`Provider.probe`): a minimal request in the upstream's own wire format, and how
    its 200 answer is told apart from something else."""

    request: UpstreamRequest
    #: reads a successful answer's body: raises ``ValueError`` (``TypeError``, ``KeyError`` …) when
    #: it is not an answer of the endpoint, or a ``GatewayError`` the answer means (a failed job)
    check: Callable[[bytes], object]
    #: the statuses of a successful answer (a job vendor's ``201 Created`` too)
    success_statuses: tuple[int, ...] = (200,)


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
    """A wire format clients speak to the gateway (e.g. ``openai.chat``): its routes,
    where its clients put the key, how its requests, answers and errors look."""

    name: str
    #: media type of a streamed response
    stream_content_type: str = "text/event-stream"

    @abstractmethod
    def routes(self) -> list[Route]: ...

    def api_key(self, request: InboundRequest) -> str | None:
        """Where this format's clients put the key. Default: ``Authorization: Bearer``."""
        from faregate.principals import bearer_token

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

    @abstractmethod
    def render_error(self, err: GatewayError, request_id: str) -> tuple[int, bytes]:
        """The format's error body and status for ``err``: the one renderer of this
        format's errors (relay, model lists, token counting, body limits)."""

    # model lists ---------------------------------------------------------------
    def claims_model_list(self, request: InboundRequest) -> bool:
        """True when a shared ``GET /v1/models`` request is in this format (by its
        headers or query)."""
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


# ---- providers (channel types) ------------------------------------------------------------


class StreamParser(ABC):
    """Turns one upstream stream event into canonical events. Stateful: one per stream.
    ``feed`` may raise ``ValueError``/``TypeError`` (a JSON error included) on a
    malformed event: the core ends the stream with an in-band ``bad_response_body``."""

    @abstractmethod
    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]: ...

    done: bool = False  # the upstream said the stream is complete


class PassthroughStream(ABC):
    """For same-format streams: decides per upstream event whether its raw bytes go to
    the client, and reads usage on the side."""

    usage: Usage | None = None
    done: bool = False
    error: GatewayError | None = None
    output_chars: int = 0
    #: the request's other ratios as the stream settled them (the images it completed, say),
    #: billed instead of the request's own; None keeps the request's
    other_ratios: Mapping[str, float] | None = None
    #: the framing of the stream it reads when not the provider's own: a vendor whose client
    #: chooses it (Gemini's SSE or JSON array) is called, and answers, in the client's
    framing: Framing | None = None

    @abstractmethod
    def feed(self, event: str | None, data: bytes) -> bool | bytes:
        """Return True to forward this event's bytes unchanged, False to hold it back, or
        the bytes to send in its place: a vendor that wraps the client's format in a framing
        of its own (Bedrock's Anthropic events inside AWS event-stream messages) re-frames
        each event, unchanged otherwise."""

    def trailer(self) -> bytes:
        """Bytes to send after the last event (nothing by default)."""
        return b""


class FakeUpstreamServer(Protocol):
    """What a provider's fake server offers a caller (see :attr:`Provider.fake_server`)."""

    @property
    def base_url(self) -> str: ...


class Provider(ABC):
    """A channel type: how to call one kind of upstream and read what comes back.
    Pure functions of their inputs; the core does the I/O. Most providers derive from
    :class:`faregate.kit.HttpJsonProvider`, which implements the plumbing from a few
    declarations."""

    name: str
    channel_types: tuple[int, ...]
    native_format: str | None = None
    default_base_url: str = ""
    #: the endpoint kinds its channels serve (``chat``, ``embeddings`` …): channel selection
    #: skips a channel whose provider does not declare the request's kind (see :meth:`serves`)
    endpoints: frozenset[str] = frozenset({"chat"})
    #: how the upstream frames a streamed body (SSE, JSON array, JSON lines, AWS event-stream)
    stream_framing: Framing = Framing.SSE
    #: an async step before each attempt that turns the channel key into the credential the
    #: upstream wants (token-exchange vendors); None for plain keys
    prepare_credential: Callable[[UpstreamTarget], Awaitable[str]] | None = None
    #: the models each of its channel types is known to serve (new-api's adaptor model lists),
    #: offered by the console when a channel is made: ``GET /api/models``, ``/api/channel/models``
    model_catalog: Mapping[int, tuple[str, ...]] = MappingProxyType({})
    #: optional: the balance (USD) left on the account behind a channel key, for the admin's
    #: ``/api/channel/update_balance``. ``await fetch_balance(target, fetch)`` builds the
    #: requests and reads the answers; ``fetch`` (:data:`BalanceFetch`) does the I/O. Return
    #: None when this channel type cannot tell, raise ``GatewayError`` on an answer it cannot
    #: read. None (the default): no channel of this provider reports a balance
    fetch_balance: Callable[[UpstreamTarget, BalanceFetch], Awaitable[float | None]] | None = None
    #: optional: a faithful fake of this upstream, for trying the gateway without a provider
    #: key (``faregate dev fake-provider NAME``) and for tests: ``fake_server(host, port,
    #: api_key)`` returns an async context manager serving until it exits; what it enters
    #: has the ``base_url`` a channel points at. Import the fake lazily: it is test code
    fake_server: Callable[[str, int, str | None], AbstractAsyncContextManager[FakeUpstreamServer]] | None = None

    def native_format_for(self, target: UpstreamTarget) -> str | None:
        """The client format this call is passed through in (see :attr:`native_format`).
        Default: :attr:`native_format`; a channel type that serves several vendors' models
        decides by the model (Vertex: Gemini's format for Gemini models, Anthropic's for
        Claude models, each passed through to its own publisher)."""
        return self.native_format

    def check_key(self, key: str, other: str, settings: Mapping[str, Any]) -> str | None:
        """What is wrong with one channel ``key`` of this provider (a composite key of the
        wrong shape, a region that is not one, a service-account JSON without its private
        key …), given the channel's ``other`` field and settings; None when it is fine.
        Called when a channel is saved, once per key (a multi-key channel's each), so a bad
        key is a 400 naming the field and is never stored. Cheap and synchronous: no I/O.
        Default: every key is accepted."""
        return None

    def channel_type_name(self, channel_type: int) -> str:
        """The name the console shows for one of its channel types (``GET /api/channel/types``).
        Default: :attr:`name`; a provider of several vendors names each type."""
        return self.name

    def channel_type_base_url(self, channel_type: int) -> str:
        """Where a channel of ``channel_type`` without a base URL goes ("": every channel
        gives its own). Default: :attr:`default_base_url`; a provider of several vendors
        gives each type's."""
        return self.default_base_url

    def serves(self, endpoint: str, channel_type: int) -> bool:
        """Whether channels of ``channel_type`` serve the ``endpoint`` kind. Default: every
        type of the provider serves its :attr:`endpoints`; a provider of several vendors
        (an OpenAI-compatible one) narrows it per type (a chat-only vendor has no images)."""
        return endpoint in self.endpoints

    def probe(self, endpoint: str, target: UpstreamTarget) -> ChannelProbe | None:
        """The admin's channel test of ``endpoint``, one of new-api's endpoint kinds other than
        chat (``embeddings``, ``rerank``, ``images``, ``responses``, ``moderations``,
        ``completions``; the core tests chat itself, with the canonical request of
        :meth:`build_request`): a minimal request of that kind as this upstream takes it
        (``target.model`` the model, a word or two of input, the smallest output), however
        the provider serves the kind (its own wire format, its own endpoint kind name). None
        when channels of ``target.channel_type`` have no such test. Pure. Default: None."""
        return None

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


# ---- endpoint drivers ---------------------------------------------------------------------


class EndpointDriver(Protocol):
    """Runs the routes of one ``kind``: reads the exchange's inbound request, goes
    through admission and attempts as the kind needs, and returns an outcome for the
    edge to send. Errors are raised as ``GatewayError`` (rendered in the client's
    format by the core, reservation refunded)."""

    kind: str

    async def handle(self, exchange: Exchange) -> Outcome: ...


# ---- policy objects ------------------------------------------------------------------------


class RequestRewriter(Protocol):
    """``rewrite(exchange)`` may change ``exchange.upstream_model``, the canonical request
    or the body before the upstream call. May be async."""

    def rewrite(self, exchange: Exchange) -> Awaitable[None] | None: ...


class ChannelFilter(Protocol):
    """``filter(candidates, exchange)`` returns the channels still allowed (sync)."""

    def filter(self, candidates: list[ChannelEntry], exchange: Exchange) -> list[ChannelEntry]: ...


class ChannelSelector(Protocol):
    """``select(candidates, exchange)`` returns one channel or None (sync; hot path)."""

    def select(self, candidates: list[ChannelEntry], exchange: Exchange) -> ChannelEntry | None: ...


class Authenticator(Protocol):
    """``kind`` is ``api_key``, ``session`` or ``access_token``; ``authenticate(request)``
    returns a principal, or None to let the next authenticator look. An ``api_key``
    authenticator may also raise ``GatewayError`` to refuse a key it recognises
    (disabled, expired, wrong IP…). May be async."""

    kind: str

    def authenticate(self, request: AuthRequest) -> Principal | None | Awaitable[Principal | None]: ...


class QuotaCheck(Protocol):
    """``check(exchange, estimate)`` returns None to allow or a ``GatewayError`` to deny.
    May be async."""

    def check(self, exchange: Exchange, estimate: int) -> GatewayError | None | Awaitable[GatewayError | None]: ...


class Pricer(Protocol):
    """``price(exchange, usage)`` returns a :class:`faregate.billing.pricing.Price` or
    None to let the next pricer decide (sync; hot path)."""

    def price(self, exchange: Exchange, usage: Usage | None) -> Price | None: ...


class UsageRecorder(Protocol):
    """``record(entry)`` receives every finished request's log entry
    (:class:`faregate.billing.ledger.LogEntry`) at the ledger's next flush. May be
    ``async def`` (the ledger awaits a coroutine it returns); errors are logged, never
    propagated."""

    def record(self, entry: LogEntry) -> Coroutine[Any, Any, None] | None: ...


class SecondFactor(Protocol):
    """A second proof of who a user is (TOTP, passkeys…), named by ``method`` (``"2fa"``,
    ``"passkey"``: the names ``POST /api/verify`` takes). The core asks it whether a user
    has enrolled, to check a code before secrets are revealed, and to remove a user's
    enrolment when an admin resets it. Each method may be async. ``verify`` gets the
    login session so a ceremony begun on an earlier request (a WebAuthn challenge) can
    be finished.

    Optional attributes: ``at_login = True`` makes every login of an enrolled user wait
    for this factor (new-api's ``require_2fa`` step, ``POST /api/user/login/2fa``);
    ``needs_code = False`` lets ``POST /api/verify`` call ``verify`` with an empty code
    (the proof came through the factor's own routes, as a passkey's does)."""

    method: str

    def enrolled(self, user_id: int) -> bool | Awaitable[bool]: ...

    def verify(self, user_id: int, code: str, session: MutableMapping[str, Any]) -> bool | Awaitable[bool]: ...

    def reset(self, user_id: int) -> bool | Awaitable[bool]:
        """Remove the user's enrolment; True when there was one."""
        ...


@dataclass(slots=True)
class StorageBackend:
    """A database engine: ``name`` chosen by ``FAREGATE_DB_URL``'s scheme(s)."""

    name: str
    schemes: tuple[str, ...]
    description: str = ""

    def tortoise_connection(self, url: str) -> dict[str, Any] | str:
        """The tortoise connection config for ``url``; defaults to the URL itself."""
        return url

    def migration_lock(self, url: str) -> AbstractAsyncContextManager[object]:
        """Held while migrations run, so that nodes started at once against one database
        migrate one after the other (the second finds nothing left to apply) instead of
        both creating the same tables. Default: no lock."""
        return contextlib.nullcontext()


@dataclass(slots=True, frozen=True)
class DbModels:
    """A plugin's own tables: ``app`` (a short unique label, e.g. ``payments_stripe``),
    the module holding its tortoise models, and the package of its migrations
    (tortoise migration files, like the core's). ``faregate migrate`` applies them on
    every engine after the core's."""

    app: str
    models: str
    migrations: str
