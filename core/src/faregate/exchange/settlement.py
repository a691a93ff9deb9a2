"""Settling an exchange's reservation exactly once: charge what the upstream reported
(or an estimate of what was seen), or refund with an error row. One builder makes
every log entry. Synchronous, so it runs even in the ``finally`` of a cancelled
stream; the one wait it may take (an exact count of a big prompt, see
:mod:`faregate.exchange.recount`) is taken in a task of its own."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from faregate.billing.ledger import LogEntry, Reservation
from faregate.billing.pricing import CACHE_WRITE_1H_MULTIPLIER, Price, usage_quota
from faregate.canonical import Usage
from faregate.db import models as m
from faregate.errors import GatewayError
from faregate.exchange import recount
from faregate.exchange.system_prompt import LOG_OTHER
from faregate.tokens import estimator

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange


def log_entry(ex: Exchange, *, type: int, quota: int, usage: Usage | None, content: str = "",
              other: dict[str, Any] | None = None, request_id: str | None = None) -> LogEntry:
    """The log row of an exchange (consume, error, …): who, which key, model, channel.
    ``request_id``: the row's own, where an exchange writes several (a session's responses)."""
    principal = ex.principal
    assert principal is not None, "an exchange is billed only after authentication"
    token = principal.token
    channel = ex.channel
    details: dict[str, Any] = {"request_path": ex.request.path, "admin_info": {"use_channel": list(ex.tried)}}
    noted = ex.extra.get(LOG_OTHER)
    if noted:  # what the attempts noted: a multi-key channel's key, a system prompt overwritten …
        noted = dict(noted)
        if "multi_key_index" in noted:
            details["admin_info"].update(is_multi_key=True, multi_key_index=noted.pop("multi_key_index"))
        details.update(noted)
    if other:
        details.update(other)
    return LogEntry(
        user_id=principal.user.id, username=principal.user.username,
        token_id=token.id if token else 0, token_name=token.name if token else "",
        model_name=ex.model, quota=quota,
        prompt_tokens=usage.input_tokens if usage else 0, completion_tokens=usage.output_tokens if usage else 0,
        use_time=int(time.perf_counter() - ex.started),
        is_stream=ex.summary.stream if ex.summary else False, channel_id=channel.id if channel else 0,
        group=principal.group, request_id=request_id or ex.request_id, type=type, content=content, other=details,
    )


def settle(ex: Exchange, usage: Usage | None, *, end_reason: str, output_chars: int,
           first_token_ms: int | None = None, reservation: Reservation | None = None,
           estimated: bool = False, other_ratios: Mapping[str, float] | None = None,
           details: Mapping[str, Any] | None = None, row_id: str | None = None) -> None:
    """Charge ``usage`` at the exchange's price and queue its consume row. Without
    usage from the upstream, bill only what was observed (never error text), the prompt
    only if the upstream got as far as answering. ``estimated``: ``usage`` is the
    operation's own estimate (an endpoint whose upstream reports none), logged as such.
    ``other_ratios``: the final ones, when the answer told them (the seconds of audio
    transcribed), instead of the request's. ``details``: what only the driver knows, added
    to the row's ``other``; ``row_id``: the row's request id when the exchange writes several
    (request ids are unique per row). A ``reservation`` other than the exchange's own is one of a
    session's (a realtime response): it is billed and logged, and the session reports
    itself once, when it ends (``ex.finish``)."""
    own = reservation is None or reservation is ex.reservation
    reservation = reservation or ex.reservation
    if reservation is None or reservation.settled:
        return
    if usage is None and output_chars and recount.claim_thread(ex):
        # the prompt is to be counted exactly but is too big for the event loop: settle
        # once a worker thread has counted it (a task of its own: this may be a finally)
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (interpreter exit): the estimate below
            pass
        else:
            ex.gateway.spawn(_settle_after_count(ex, end_reason=end_reason, output_chars=output_chars,
                                                 first_token_ms=first_token_ms, reservation=reservation,
                                                 other_ratios=other_ratios, details=details, row_id=row_id))
            return
    price = ex.price or Price()
    if other_ratios is not None:
        price = dataclasses.replace(price, other_ratios=other_ratios)
    usage_source = "estimated" if estimated else "upstream"
    token_counter = ""
    if usage is None:
        usage_source = "estimated"
        # the gateway's own count: exact where a tokenizer knows the model and the text was
        # affordable (recount), else the estimator's rule; the prompt only if output was seen
        exact_prompt, exact_output, token_counter = recount.exact_counts(ex) if output_chars else (None, None, "")
        out_tokens = exact_output if exact_output is not None else estimator.chars(output_chars)
        prompt = exact_prompt if exact_prompt is not None else ex.summary.prompt_tokens if ex.summary else 0
        usage = Usage(input_tokens=max(1, prompt) if out_tokens else 0, output_tokens=out_tokens)
    quota = usage_quota(price, usage)
    other: dict[str, Any] = {
        "latency_ms": int((time.perf_counter() - ex.started) * 1000),  # use_time is whole seconds, as new-api
        "model_ratio": price.model_ratio,
        "group_ratio": price.group_ratio,
        "completion_ratio": price.completion_ratio,
        "cache_tokens": usage.cache_read_tokens,
        "cache_ratio": price.cache_ratio,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "end_reason": end_reason,
        "usage_source": usage_source,
    }
    if token_counter:
        other["token_counter"] = token_counter
    if price.model_price is not None:
        other["model_price"] = price.model_price
    if price.other_ratios:
        other["other_ratios"] = dict(price.other_ratios)
    if usage.cache_write_1h_tokens:  # new-api's names: the one-hour writes, at their higher ratio
        other["cache_creation_tokens_1h"] = usage.cache_write_1h_tokens
        other["cache_creation_ratio_1h"] = price.cache_write_ratio * CACHE_WRITE_1H_MULTIPLIER
    if usage.image_tokens:
        other["image_tokens"] = usage.image_tokens
        other["image_ratio"] = price.image_ratio
    if usage.audio_tokens or usage.output_audio_tokens:
        other["audio_tokens"] = usage.audio_tokens
        other["audio_ratio"] = price.audio_ratio
    if usage.output_audio_tokens:
        other["audio_output_tokens"] = usage.output_audio_tokens
        other["audio_completion_ratio"] = price.audio_completion_ratio
    if first_token_ms is not None:
        other["frt"] = first_token_ms
    if ex.upstream_model and ex.upstream_model != ex.model:
        other["is_model_mapped"] = True
        other["upstream_model_name"] = ex.upstream_model
    if details:
        other.update(details)
    entry = log_entry(ex, type=m.LOG_CONSUME, quota=quota, usage=usage, other=other, request_id=row_id)
    channel = ex.channel
    reservation.settle(quota, entry if ex.options.log_consume else None, channel.id if channel else 0)
    if own:
        ex.finish(200, end_reason, usage, quota)


async def _settle_after_count(ex: Exchange, *, end_reason: str, output_chars: int, first_token_ms: int | None,
                              reservation: Reservation, other_ratios: Mapping[str, float] | None,
                              details: Mapping[str, Any] | None, row_id: str | None) -> None:
    try:
        await recount.prepare(ex)
    finally:  # counted or not (cancelled at shutdown), the reservation is settled
        settle(ex, None, end_reason=end_reason, output_chars=output_chars, first_token_ms=first_token_ms,
               reservation=reservation, other_ratios=other_ratios, details=details, row_id=row_id)


def refund(ex: Exchange, err: GatewayError, reservation: Reservation | None = None) -> None:
    """Give the reservation back; record an error row (type 5). A session's reservation
    (see :func:`settle`) leaves the report to the session."""
    own = reservation is None or reservation is ex.reservation
    reservation = reservation or ex.reservation
    if reservation is None or reservation.settled:
        return
    entry = log_entry(ex, type=m.LOG_ERROR, quota=0, usage=None, content=err.detail or err.message,
                      other={"status_code": err.status, "error_code": err.code, "error_type": err.type})
    reservation.refund(entry)
    if own:
        ex.finish(err.status, err.code or err.type or "error")
