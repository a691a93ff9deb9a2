"""Providers (channel types): how a request reaches an upstream and its answer comes back."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from types import MappingProxyType
from typing import Any, Protocol

from faregate.canonical import ChatRequest, ChatResponse, StreamEvent, Usage
from faregate.contracts.values import BalanceFetch, ChannelProbe, RequestSummary, UpstreamRequest, UpstreamTarget
from faregate.errors import GatewayError
from faregate.framing import Framing


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
