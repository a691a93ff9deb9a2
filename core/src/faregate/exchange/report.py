"""Making an exchange's :class:`~faregate.observe.report.ExchangeReport` when it ends."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from faregate.observe.report import ExchangeReport, dispatch

if TYPE_CHECKING:
    from faregate.canonical import Usage
    from faregate.exchange.exchange import Exchange


def finish(ex: Exchange, status: int, end_reason: str, usage: Usage | None, quota: int) -> None:
    observers = ex.gateway.observers
    if not observers:
        return
    now = time.perf_counter()
    upstream = ex.upstream_seconds
    if ex.answer_at:  # the answer's body (a stream's whole relay) is upstream time too
        upstream += now - ex.answer_at
    principal, channel, summary = ex.principal, ex.channel, ex.summary
    token = principal.token if principal is not None else None
    dispatch(observers, ExchangeReport(
        request_id=ex.request_id, route=ex.request.route.path, kind=ex.request.route.kind, format=ex.format.name,
        model=summary.model if summary is not None else "",
        user_id=principal.user.id if principal is not None else 0, key_name=token.name if token else "",
        group=principal.group if principal is not None else "",
        channel_id=channel.id if channel else 0, channel_type=channel.type if channel else 0,
        status=status, attempts=len(ex.tried), end_reason=end_reason,
        stream=summary.stream if summary is not None else False,
        seconds=now - ex.started, upstream_seconds=upstream,
        input_tokens=usage.input_tokens if usage else 0, output_tokens=usage.output_tokens if usage else 0,
        quota=quota, client_ip=ex.request.client_ip))
