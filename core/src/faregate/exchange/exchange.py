"""One client request's way through the gate, whatever its endpoint kind and transport.

An :class:`Exchange` is made by the edge per inbound request and handed to the
endpoint driver of the route's kind. The driver walks it through the stages it needs
(see docs/architecture.md):

1. admission: :meth:`authenticate`, :meth:`read_json`, :meth:`begin` (the format's
   summary; model access), :meth:`admit` (price, quota checks, reservation);
2. attempts: :meth:`relay` with an :class:`~faregate.exchange.attempts.Operation`
   (choose, rewrite, send, classify, retry / exclude / disable);
3. settlement: :meth:`settle` or :meth:`fail`, exactly once per reservation.

Policy objects (rewriters, filters, selectors, pricers, quota checks) receive the
exchange and read its public state: ``model``, ``principal``, ``summary``,
``channel``, ``upstream_model``, ``attempt``, ``body``, ``canonical()``.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from faregate import jsonutil
from faregate.billing.output_limits import MAX_OUTPUT_TOKENS as MAX_OUTPUT_TOKENS  # the largest output budget
from faregate.canonical import ChatRequest, Usage
from faregate.contracts.inbound import JSON, InboundRequest, Outcome
from faregate.errors import bad_request
from faregate.exchange import admission, report, sensitive, settlement
from faregate.observe.logs import request_id_var

if TYPE_CHECKING:
    from faregate.billing.ledger import Reservation
    from faregate.billing.pricing import Price
    from faregate.contracts import InboundFormat, RequestSummary
    from faregate.errors import GatewayError
    from faregate.exchange.attempts import Operation
    from faregate.exchange.host import ExchangeHost
    from faregate.exchange.options import RelayOptions
    from faregate.limits.limiter import Ticket
    from faregate.multipart import Form
    from faregate.principals import Principal
    from faregate.state.snapshot import ChannelEntry

P = ParamSpec("P")
T = TypeVar("T")

REQUEST_ID_HEADER = "X-Oneapi-Request-Id"
#: the same id under the names the official SDKs read (openai: x-request-id, anthropic: request-id)
SDK_REQUEST_ID_HEADERS = ("X-Request-Id", "Request-Id")


def request_id_headers(request_id: str) -> dict[str, str]:
    headers = {REQUEST_ID_HEADER: request_id}
    for name in SDK_REQUEST_ID_HEADERS:
        headers[name] = request_id
    return headers


#: the second a request id's time part was last made for, and that part
_id_second: tuple[int, str] = (0, "")


def new_request_id() -> str:
    """The local time to the second and 16 random hex digits (new-api's shape). The time part
    is formatted once a second; the random part is 8 bytes from the OS (a whole ``uuid4``
    object per request cost ~10x as much)."""
    global _id_second
    now = int(time.time())
    second, stamp = _id_second
    if now != second:
        stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now))
        _id_second = (now, stamp)
    return stamp + os.urandom(8).hex()


#: a proxy's id as it may be kept: printable, and no longer than the log's request_id column
#: (64: MySQL and PostgreSQL refuse a longer value, which would fail the whole billing batch)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def trusted_request_id(value: str | None) -> str | None:
    """A proxy's request id, if it is one we can put in headers and logs as it is."""
    if value and _REQUEST_ID.fullmatch(value):
        return value
    return None


class Exchange:
    __slots__ = ("gateway", "request", "format", "request_id", "started", "principal", "summary", "body", "raw",
                 "price", "reservation", "channel", "upstream_model", "attempt", "tried", "extra", "secrets",
                 "upstream_seconds", "answer_at", "reported", "unable_at_admission", "limit_ticket", "_canonical")

    def __init__(self, gateway: ExchangeHost, request: InboundRequest, fmt: InboundFormat) -> None:
        self.gateway = gateway
        self.request = request
        self.format = fmt
        # a trusted proxy's id (the edge drops the header from anyone else), else a new one
        self.request_id = trusted_request_id(request.headers.get("x-request-id")) or new_request_id()
        request_id_var.set(self.request_id)  # for every log line written while serving it
        self.started = time.perf_counter()
        self.principal: Principal | None = None
        self.summary: RequestSummary | None = None
        self.body: dict[str, Any] = {}
        self.raw = b""
        self.price: Price | None = None
        self.reservation: Reservation | None = None
        self.channel: ChannelEntry | None = None
        self.upstream_model = ""
        self.attempt = 0
        self.tried: list[int] = []
        self.extra: dict[str, Any] = {}
        #: the current attempt's channel keys and credential: redacted from upstream text
        self.secrets: tuple[str, ...] = ()
        #: time spent waiting on upstreams, and when the answering upstream's headers came
        self.upstream_seconds = 0.0
        self.answer_at = 0.0
        self.reported = False
        #: what admit found for its operation: the channels unable to serve it, and the routing
        #: levels it read them from (the attempts reuse the set while those are current)
        self.unable_at_admission: tuple[Operation, list[list[ChannelEntry]], set[int]] | None = None
        #: the rate limits it was admitted under, settled when it finishes (None: no limit applied)
        self.limit_ticket: Ticket | None = None
        self._canonical: ChatRequest | None = None

    # ---- what policy objects read -----------------------------------------------------
    @property
    def model(self) -> str:
        """The model the client asked for (what is priced and logged)."""
        return self.summary.model if self.summary is not None else ""

    @property
    def path(self) -> str:
        return self.request.path

    @property
    def headers(self) -> Mapping[str, str]:
        return self.request.headers

    @property
    def client_ip(self) -> str:
        return self.request.client_ip

    @property
    def options(self) -> RelayOptions:
        return self.gateway.snapshot.options

    def canonical(self) -> ChatRequest:
        """The request in the canonical model, parsed on first use (same-format requests
        never need it)."""
        if self._canonical is None:
            assert self.summary is not None
            self._canonical = self.format.parse(self.body, self.summary)
        return self._canonical

    def set_canonical(self, request: ChatRequest) -> None:
        self._canonical = request

    def restart_attempt(self, body: dict[str, Any], raw: bytes) -> None:
        """Rewriters see the client's request afresh on every attempt."""
        self.body, self.raw, self._canonical = body, raw, None

    # ---- admission --------------------------------------------------------------------
    async def authenticate(self) -> Principal:
        return await admission.authenticate(self)

    async def read_json(self) -> tuple[bytes, dict[str, Any]]:
        return await admission.read_json(self)

    async def work_on_body(self, raw: bytes, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``work(*args, **kwargs)``, CPU work on the request body ``raw`` (a format's check
        and estimate): inline for a small body, for a big one in a worker thread, in its turn
        in the worker's big-body lane (:mod:`faregate.exchange.big_bodies`)."""
        return await admission.work_on_body(self, raw, work, *args, **kwargs)

    async def read_form(self) -> Form:
        """A ``multipart/form-data`` body (audio uploads, image edits), parsed under limits;
        the bytes as received stay in :attr:`raw`."""
        return await admission.read_form(self)

    def begin(self, summary: RequestSummary, body: dict[str, Any], raw: bytes) -> None:
        """Take the format's summary of the body; 403 if the key may not use its model."""
        if summary.max_tokens is not None and not 1 <= summary.max_tokens <= MAX_OUTPUT_TOKENS:
            # whatever the format let through: no reservation arithmetic on absurd numbers
            raise bad_request(f"max_tokens must be from 1 to {MAX_OUTPUT_TOKENS}", param="max_tokens")
        summary.answers = max(1, summary.answers)  # every request has at least its one answer
        self.summary, self.body, self.raw = summary, body, raw
        assert self.principal is not None, "authenticate before begin"
        admission.check_model_allowed(self.principal, summary.model)
        sensitive.refuse(self.extra)  # what the summary's scan found (work_on_body)

    def check_prompt(self, *texts: str) -> None:
        """Refuse a prompt the format's summary does not count as text (an image's prompt, a
        speech's input) that contains a sensitive word; before :meth:`begin`."""
        found = sensitive.scan_texts(self.options, list(texts))
        if found is not None:
            self.extra[sensitive.FOUND_KEY] = found

    async def admit(self, operation: Operation | None = None) -> None:
        """Price, quota checks, reservation; given the ``operation`` that will relay the request,
        a model whose channels cannot serve its endpoint is refused first, naming the endpoint."""
        await admission.admit(self, operation)

    # ---- attempts ---------------------------------------------------------------------
    async def relay(self, operation: Operation) -> Outcome:
        from faregate.exchange.attempts import run_attempts

        return await run_attempts(self, operation)

    # ---- settlement -------------------------------------------------------------------
    def settle(self, usage: Usage | None, *, end_reason: str, output_chars: int = 0,
               first_token_ms: int | None = None, estimated: bool = False,
               other_ratios: Mapping[str, float] | None = None, reservation: Reservation | None = None,
               details: Mapping[str, Any] | None = None, row_id: str | None = None) -> None:
        """Charge ``usage`` against the exchange's reservation, or against a session's
        ``reservation`` (one of :meth:`reserve`'s: then the session reports itself with
        :meth:`finish` when it ends, and names each row, ``row_id``: request ids are unique
        per row); ``details`` go into the row's ``other``."""
        settlement.settle(self, usage, end_reason=end_reason, output_chars=output_chars,
                          first_token_ms=first_token_ms, estimated=estimated, other_ratios=other_ratios,
                          reservation=reservation, details=details, row_id=row_id)

    def fail(self, err: GatewayError, reservation: Reservation | None = None) -> None:
        settlement.refund(self, err, reservation)

    async def reserve(self, amount: int) -> Reservation:
        """Another reservation for the same caller, after :meth:`admit` (a session's next
        response): 403 when the user's or the key's quota cannot cover ``amount``."""
        return await admission.reserve(self, amount)

    def finish(self, status: int, end_reason: str, usage: Usage | None = None, quota: int = 0) -> None:
        """Report how the exchange ended, once (settlement calls this; the edge for
        answers that reserved nothing)."""
        if not self.reported:
            self.reported = True
            if self.limit_ticket is not None:
                self.gateway.limiter.settle(self.limit_ticket, status, _limit_tokens(status, usage))
            report.finish(self, status, end_reason, usage, quota)

    # ---- outcomes ---------------------------------------------------------------------
    def json(self, payload: Any, status: int = 200) -> Outcome:
        return Outcome(status=status, body=jsonutil.dumps(payload), headers=request_id_headers(self.request_id))

    def raw_json(self, body: bytes, status: int = 200) -> Outcome:
        """A JSON body already encoded (an upstream's answer passed through unchanged)."""
        return Outcome(status=status, body=body, headers=request_id_headers(self.request_id))

    def error(self, err: GatewayError) -> Outcome:
        """``err`` in the client's format: the one place errors are rendered."""
        return render_error(self.format, err, self.request_id)


def _limit_tokens(status: int, usage: Usage | None) -> int | None:
    """The tokens a finished request counts against a tokens-per-minute limit: its usage;
    without one, none for a failed request, and None (keep the admission's estimate) for a
    served one."""
    if usage is not None:
        return usage.input_tokens + usage.output_tokens
    return 0 if status >= 400 else None


def render_error(fmt: InboundFormat, err: GatewayError, request_id: str) -> Outcome:
    status, body = fmt.render_error(err, request_id)
    headers = request_id_headers(request_id)
    if err.retry_after:
        headers["Retry-After"] = str(max(1, math.ceil(err.retry_after)))
        headers["Retry-After-Ms"] = str(int(err.retry_after * 1000))
    if err.rate_limit is not None:
        headers.update(fmt.rate_limit_headers(err.rate_limit))
    # the SDKs retry 408/409/429/5xx unless told: a decision the gateway made itself (no
    # channel for the model, bad input, auth) is final; an upstream's own verdict is relayed
    should_retry = err.should_retry
    if should_retry is None and not err.upstream and status < 500 and status != 429:
        should_retry = False
    if should_retry is not None:
        headers["X-Should-Retry"] = "true" if should_retry else "false"
    return Outcome(status=status, body=body, content_type=JSON, headers=headers, error=err)
