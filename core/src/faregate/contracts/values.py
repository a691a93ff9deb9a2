"""The plain values the contracts pass around: routes, request summaries, token counts,
upstream targets and requests, channel probes, model entries."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

WEBSOCKET = "WEBSOCKET"  # Route.method of a WebSocket route

#: no other ratios (shared, immutable): what a request summary and a price multiply by when nothing does
NO_RATIOS: Mapping[str, float] = MappingProxyType({})


def no_ratios() -> Mapping[str, float]:
    return NO_RATIOS


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
    whose upstream reported no usage. ``max_tokens`` is the client's own bound on the
    whole output (every answer of it), None when it set none. ``other_ratios`` multiply
    the request's price (new-api's other ratios: an image request's ``n``, ``size`` and
    ``quality``, seconds of audio …); they are logged by name.

    A request that sets no bound reserves the model's output limit per answer
    (``ModelMaxOutputTokens``) times ``answers``; when its format sends that bound
    upstream (``sends_output_cap``), admission records it in ``output_cap`` (lowered to
    what the balance affords) and the request goes upstream with it
    (:meth:`InboundFormat.add_output_cap` as passed through, ``ChatRequest.max_tokens``
    converted), so no answer is billed beyond what was reserved for it."""

    model: str
    stream: bool = False
    max_tokens: int | None = None
    include_usage: bool = False
    prompt_tokens: int = 0
    other_ratios: Mapping[str, float] = field(default_factory=no_ratios)
    #: how many answers the upstream writes, each up to the output bound (OpenAI's ``n``,
    #: Gemini's ``candidateCount``, a completions batch's prompts × choices)
    answers: int = 1
    #: the output bound is the client's to set (a max tokens field), and a request that sets none
    #: goes upstream with :attr:`output_cap` (its format writes it): only then may admission
    #: lower the cap to what the balance affords
    sends_output_cap: bool = False
    #: for a request that sets no bound and sends the gateway's: the output tokens per answer
    #: reserved and sent. A format whose API has a default bound proposes it (legacy
    #: completions: 16), else admission takes the model's limit; admission may lower it to what
    #: the balance affords
    output_cap: int | None = None


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
