"""``GET /v1/realtime?model=…`` (kind ``realtime``): admitted like any request before the
client's WebSocket is accepted (a bad key, a model no realtime channel serves, a quota too
small for one response: refused with the HTTP error), the channel's realtime WebSocket
dialed with its key (fail-over to the next channel as for HTTP while nothing was
relayed), then the session (:mod:`.session`)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from faregate.api import (
    AttemptFailed,
    Exchange,
    GatewayError,
    Outcome,
    Provider,
    RequestSummary,
    Services,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamTarget,
    UpstreamWebSocket,
    WebSocketHandshake,
    bad_request,
)
from faregate_adapter_openai.realtime import protocol as p
from faregate_adapter_openai.realtime.billing import SessionBill
from faregate_adapter_openai.realtime.session import Limits, RealtimeSession

REALTIME = "realtime"
PATH = "/v1/realtime"
MAX_MODEL_LENGTH = 256



@runtime_checkable
class RealtimeProvider(Protocol):
    """What a provider offers to serve realtime sessions (besides declaring the endpoint)."""

    def build_realtime(self, target: UpstreamTarget, beta: bool) -> UpstreamRequest:
        """The WebSocket request of a session with ``target.model`` (method ``WEBSOCKET``)."""
        ...


class RealtimeDial:
    """One attempt: open the channel's realtime WebSocket."""

    endpoint = REALTIME

    def __init__(self, beta: bool) -> None:
        self.beta = beta
        self.websocket: UpstreamWebSocket | None = None

    def serves(self, provider: Provider, channel_type: int) -> bool:
        return provider.serves(REALTIME, channel_type) and isinstance(provider, RealtimeProvider)

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        assert isinstance(provider, RealtimeProvider)
        return provider.build_realtime(target, self.beta)

    async def finish(self, ex: Exchange, provider: Provider, resp: UpstreamResponse, passthrough: bool) -> Outcome:
        websocket = resp.websocket if isinstance(resp, WebSocketHandshake) else None
        if websocket is None:
            raise AttemptFailed(GatewayError(502, "the upstream opened no WebSocket", code="bad_response",
                                             upstream=True))
        self.websocket = websocket
        return Outcome(status=101)


def read_model(query: Any) -> str:
    """``?model=``: required, bounded; what the gateway does not relay is refused by name."""
    for name in ("call_id", "intent"):
        if query.get(name):
            raise bad_request(f"`{name}` is not supported by this gateway's realtime endpoint", param=name)
    model = query.get("model")
    if not isinstance(model, str) or not model.strip():
        raise bad_request("model is required (?model=…)", param="model")
    if len(model) > MAX_MODEL_LENGTH or not model.isprintable():
        raise bad_request(f"model must be at most {MAX_MODEL_LENGTH} printable characters", param="model")
    return model


class RealtimeDriver:
    kind = REALTIME

    def __init__(self, services: Services) -> None:
        self.services = services
        settings = services.settings
        self.reserve_output = int(settings.openai_realtime_reserve_output_tokens)
        self.limits = Limits(idle_seconds=float(settings.openai_realtime_idle_seconds),
                             max_seconds=float(settings.openai_realtime_max_session_seconds),
                             max_message=int(float(settings.openai_realtime_max_message_kb) * 1024),
                             per_second=float(settings.openai_realtime_max_events_per_second),
                             drain_seconds=float(settings.client_gone_drain_seconds))

    async def handle(self, ex: Exchange) -> Outcome:
        request = ex.request
        peer = request.websocket
        if peer is None:  # the route is a WebSocket's; never reached over plain HTTP
            raise GatewayError(426, "the Realtime API needs a WebSocket", code="upgrade_required")
        await ex.authenticate()
        model = read_model(request.query)
        # a response's output bound when neither it nor the session sets one: the model's limit
        bound = ex.options.output_limits.limit(model) or self.reserve_output
        ex.begin(RequestSummary(model=model, stream=True, max_tokens=bound, prompt_tokens=0), {}, b"")
        dial = RealtimeDial(p.wants_beta(request.headers, request.subprotocols))
        await ex.admit(dial)
        assert ex.reservation is not None
        bill = SessionBill(ex, ex.reservation, bound, beta=dial.beta)
        needed = bill.amount()  # audio output may cost more than the text-priced admission
        if needed > ex.reservation.amount:
            ex.reservation.refund()  # given back first: the two are never held at once
            ex.reservation = bill.standing = await ex.reserve(needed)
        await ex.relay(dial)
        assert dial.websocket is not None
        # from here the session owns the reservation (no await until its own try/finally)
        ex.reservation = None
        subprotocol = p.REALTIME_PROTOCOL if p.REALTIME_PROTOCOL in request.subprotocols else None
        await RealtimeSession(ex, peer, dial.websocket, bill, self.limits, subprotocol, self.services.spawn).run()
        return Outcome(status=101)
