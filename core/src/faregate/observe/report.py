"""One :class:`ExchangeReport` per exchange, made when it ends (settled, refunded, or
answered without a reservation) and handed to every observer: the request log line,
the metrics, and plugins implementing ``exchange_finished``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("faregate.observe")


@dataclass(slots=True, frozen=True)
class ExchangeReport:
    """How one client request through the gate went. Never holds a key or a body."""

    request_id: str
    #: the route's path template (``/v1/chat/completions``), not the concrete path: bounded for metrics
    route: str
    kind: str
    format: str
    model: str
    user_id: int
    key_name: str
    group: str
    channel_id: int
    channel_type: int
    status: int
    #: channels tried (0: refused before any)
    attempts: int
    #: done, eof, timeout, client_gone, upstream_error … or the error code of a refusal
    end_reason: str
    stream: bool
    seconds: float
    #: time spent waiting on upstreams (connect, headers, body; a stream's whole relay)
    upstream_seconds: float
    input_tokens: int
    output_tokens: int
    quota: int
    client_ip: str

    @property
    def overhead_seconds(self) -> float:
        """The gateway's own share of the latency."""
        return max(0.0, self.seconds - self.upstream_seconds)

    @property
    def failovers(self) -> int:
        return max(0, self.attempts - 1)


Observer = Callable[[ExchangeReport], None]


def dispatch(observers: list[Observer], report: ExchangeReport) -> None:
    """Every observer sees the report; one that fails is logged and does not stop the others
    (settlement calls this: it must never raise)."""
    for observer in observers:
        try:
            observer(report)
        except Exception:  # noqa: BLE001 - an observer's bug must not break billing
            log.exception("observer %r failed on request %s", observer, report.request_id)
