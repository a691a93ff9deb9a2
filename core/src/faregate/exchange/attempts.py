"""The attempt loop: choose a channel, rewrite, build and send the upstream request,
classify what comes back; retry on another channel (never one already tried), another key
of the same multi-key channel when the failure was the key's (a 429, a dead key), within
``RetryTimes`` and ``RetryTimeLimitSeconds``. A failing channel or key cools down
(:mod:`faregate.exchange.breaker`); a dead key's channel is disabled
(:mod:`faregate.exchange.health`). What a 200 becomes is the endpoint kind's
:class:`Operation`'s business."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from faregate.awaitables import await_me_maybe
from faregate.contracts import WEBSOCKET, Provider, UpstreamRequest, UpstreamTarget
from faregate.db import models as m
from faregate.errors import GatewayError, model_not_found
from faregate.exchange.breaker import CHANNEL
from faregate.exchange.channel_request import customize, override_context
from faregate.exchange.health import (
    MAX_ERROR_BODY,
    MAX_KEY_ROTATIONS,
    judge_answer,
    read_retry_headers,
    trip,
    upstream_error,
)
from faregate.exchange.routing import MEMO_MIN_CHANNELS, ListMemo, map_model, select_channel
from faregate.exchange.system_prompt import LOG_OTHER, note_log
from faregate.overrides.headers import apply_headers
from faregate.overrides.params import OverrideRefused, invalid
from faregate.state.channel_features import NO_FEATURES
from faregate.upstream import UpstreamAddressRefused, UpstreamResponse, UpstreamTransportError

if TYPE_CHECKING:
    from faregate.contracts.inbound import Outcome
    from faregate.exchange.exchange import Exchange
    from faregate.state.snapshot import ChannelEntry

log = logging.getLogger("faregate.relay")

# what other modules import from here
__all__ = ["MAX_ERROR_BODY", "AttemptFailed", "Operation", "apply_headers", "choose", "read_retry_headers",
           "run_attempts", "unable_channels", "upstream_error", "upstream_target"]


class AttemptFailed(Exception):
    """Raised by an operation when an answer failed before anything reached the client
    (an empty stream, say): the attempt counts as failed and the next channel is tried."""

    def __init__(self, error: GatewayError) -> None:
        super().__init__(error.message)
        self.error = error


class Operation(Protocol):
    """What one endpoint kind does within an attempt."""

    #: the endpoint kind, as providers declare it in :attr:`Provider.endpoints`
    endpoint: str

    def serves(self, provider: Provider, channel_type: int) -> bool:
        """Whether a channel of this provider and type can take the request (capabilities;
        normally ``provider.serves(self.endpoint, channel_type)``)."""
        ...

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        """The attempt's upstream request; method ``WEBSOCKET`` opens a WebSocket instead
        (``ws://`` / ``wss://`` URL), whose success is a 101 with the connection on
        ``resp.websocket`` (a :class:`~faregate.upstream.WebSocketHandshake`)."""
        ...

    async def finish(self, ex: Exchange, provider: Provider, resp: UpstreamResponse, passthrough: bool) -> Outcome:
        """Turn the upstream's 200 (101; an operation with ``success_statuses``, e.g. ``(200,
        201)``, any of those) into the client's outcome (settling the exchange, now or when a
        stream ends); raise :class:`AttemptFailed` to try another channel."""
        ...


class _Failed(Exception):
    """One call failed in a way another channel may not (``rotate``: another key of the
    same channel may) answer."""

    def __init__(self, error: GatewayError, rotate: bool = False) -> None:
        super().__init__(error.message)
        self.error = error
        self.rotate = rotate


async def run_attempts(ex: Exchange, op: Operation) -> Outcome:
    gw = ex.gateway
    options = gw.snapshot.options
    principal = ex.principal
    assert principal is not None and ex.summary is not None, "admit before relaying"
    excluded = _unable_at_start(ex, op)
    last_error: GatewayError | None = None
    original = (ex.body, ex.raw)
    attempts = 1 if principal.pinned_channel is not None else options.retry_times + 1
    deadline = time.monotonic() + options.retry_time_limit
    calls = 0
    for attempt in range(attempts):
        if attempt and time.monotonic() >= deadline:
            log.warning("no further channel tried: the request spent %.0f s on attempts (RetryTimeLimitSeconds)",
                        options.retry_time_limit)
            break
        ex.attempt = attempt
        channel = choose(ex, attempt, excluded)
        if channel is None:
            break
        ex.channel = channel
        ex.tried.append(channel.id)
        excluded.add(channel.id)  # never the same channel twice in one request
        provider = gw.providers.get(channel.type)
        if provider is None or not op.serves(provider, channel.type):  # a pinned channel: not filtered beforehand
            last_error = cannot_serve(ex, op, channel.type, provider)
            continue
        tried_keys: set[str] = set()
        while True:
            if calls:
                ex.restart_attempt(*original)
            calls += 1
            remaining = deadline - time.monotonic()
            try:
                return await _call(ex, op, channel, provider, tried_keys, remaining if calls > 1 else None)
            except _Failed as failed:
                last_error = failed.error
                rotate = failed.rotate
            if not (rotate and len(tried_keys) <= MAX_KEY_ROTATIONS and time.monotonic() < deadline
                    and any(k not in tried_keys for k in channel.keys)):
                break
            log.warning("channel %s: trying another of its keys", channel.id)
    if last_error is not None:
        raise last_error
    raise model_not_found(ex.model, principal.group)


async def _call(ex: Exchange, op: Operation, channel: ChannelEntry, provider: Provider, tried_keys: set[str],
                limit: float | None) -> Outcome:
    """One upstream call on ``channel`` with a key it has not tried yet; raises
    :class:`_Failed` (another channel, or key, may answer) or the final ``GatewayError``.
    ``limit``: seconds left for its answer's headers (a retry within the time cap)."""
    gw = ex.gateway
    summary = ex.summary
    assert summary is not None
    breakers = gw.breakers
    if channel.multi_key:  # skip the keys this request tried and those cooling down
        now = time.monotonic()
        key = channel.pick_key(lambda k: k in tried_keys or breakers.key_blocked(channel.id, k, now))
    else:
        key = channel.pick_key()
    tried_keys.add(key)
    features = channel.features
    ex.extra.pop(LOG_OTHER, None)  # what the log notes is the answering attempt's
    ex.upstream_model = map_model(channel.model_mapping, ex.model)
    for rewriter in gw.request_rewriters:
        await await_me_maybe(rewriter.rewrite(ex))
    try:
        if features.problem:
            raise invalid(features.problem)
        target = await upstream_target(channel, provider, ex.upstream_model, stream=summary.stream,
                                       client_headers=ex.request.headers, key=key)
        ex.secrets = (*channel.keys, key, target.key)
        passthrough = (provider.native_format_for(target) == ex.format.name
                       and not channel.setting.get("force_convert"))
        upstream_req = op.build(ex, provider, target, passthrough)
        if features is not NO_FEATURES and customize(upstream_req, features, target.key, ex.request.headers,
                                                     lambda: override_context(ex)):
            note_log(ex, param_override=True)
    except OverrideRefused as refused:
        if not refused.retry:
            raise  # the channel's override refuses this request (return_error): final
        raise _Failed(refused) from None
    except GatewayError as refused:
        if not (refused.code or "").startswith("channel:"):
            raise  # the request's own problem: no other channel would take it either
        # the channel's configuration (a malformed key …): the operator's to fix, another may serve
        log.warning("channel %s cannot be called: %s", channel.id, refused.message)
        raise _Failed(refused) from None
    if channel.multi_key:  # new-api's admin_info: which key answered
        note_log(ex, multi_key_index=channel.key_index.get(key, 0))
    breakers.begin(channel.id, key)
    try:
        return await _send(ex, op, channel, provider, upstream_req, key, limit, passthrough)
    finally:
        breakers.release(channel.id, key)  # no-op after a verdict; frees a trial the request left undecided


async def _send(ex: Exchange, op: Operation, channel: ChannelEntry, provider: Provider,
                upstream_req: UpstreamRequest, key: str, limit: float | None, passthrough: bool) -> Outcome:
    """Send the attempt's request and classify what comes back (see :func:`_call`)."""
    gw = ex.gateway
    summary = ex.summary
    assert summary is not None
    breakers = gw.breakers
    features = channel.features
    sent = time.perf_counter()
    # a WEBSOCKET request (a realtime session) is an upgrade: 101 is its success
    websocket = upstream_req.method == WEBSOCKET
    capped = limit is not None and limit < gw.settings.first_byte_timeout
    try:
        if websocket:
            resp: UpstreamResponse = await gw.upstream.websocket(upstream_req, proxy=features.proxy, timeout=limit)
        else:
            resp = await gw.upstream.send(upstream_req, stream=summary.stream, proxy=features.proxy, timeout=limit)
    except UpstreamTransportError as exc:
        ex.upstream_seconds += time.perf_counter() - sent
        log.warning("channel %s: request failed: %s", channel.id, exc)
        if not (exc.timeout and capped):  # cut short by the request's time cap: not the channel's fault
            trip(gw, channel, CHANNEL, f"request failed: {exc}")
        if isinstance(exc, UpstreamAddressRefused):  # the caller learns neither the host nor the address
            raise _Failed(GatewayError(502, "upstream error: the gateway does not connect to the channel's address",
                                       code="address_refused", upstream=True)) from None
        raise _Failed(GatewayError(500, "upstream error: do request failed", code="do_request_failed",
                                   upstream=True)) from None
    ex.answer_at = time.perf_counter()
    ex.upstream_seconds += ex.answer_at - sent
    # 101 for an upgrade; an operation may take another 2xx (a job vendor's 201 Created)
    if resp.status_code not in ((101,) if websocket else getattr(op, "success_statuses", (200,))):
        err = await upstream_error(ex, provider, resp, channel)
        ex.upstream_seconds += time.perf_counter() - ex.answer_at
        ex.answer_at = 0.0
        rotate = judge_answer(ex, channel, key, resp.status_code, err)
        if not gw.snapshot.options.should_retry_status(err.status) or err.code == "bad_response_body":
            raise err
        raise _Failed(err, rotate)
    try:
        outcome = await op.finish(ex, provider, resp, passthrough)
    except AttemptFailed as failed:
        ex.upstream_seconds += time.perf_counter() - ex.answer_at if ex.answer_at else 0.0
        ex.answer_at = 0.0
        trip(gw, channel, CHANNEL, f"a broken answer ({failed.error.code})")
        raise _Failed(failed.error) from None
    breakers.success(channel.id, key)
    return outcome


def channels_by_type(levels: list[list[ChannelEntry]]) -> dict[int, list[int]]:
    by_type: dict[int, list[int]] = {}
    for level in levels:
        for channel in level:
            by_type.setdefault(channel.type, []).append(channel.id)
    return by_type


#: a big model's channel ids by type, per routing levels list: the endpoint check per request
#: is then one per type, not one per channel (10,000 channels from new-api's batch mode)
_by_type = ListMemo[dict[int, list[int]]]()


def channels_by_id(levels: list[list[ChannelEntry]]) -> dict[int, ChannelEntry]:
    return {c.id: c for level in levels for c in level}


_by_id: ListMemo[dict[int, ChannelEntry]] = ListMemo()


def unable_channels(ex: Exchange, op: Operation) -> set[int]:
    """The channels of this request's model whose type has no provider loaded or whose
    provider does not serve the endpoint: never chosen, so no attempt is spent on them.
    Raises when that leaves none, naming the endpoint."""
    gw = ex.gateway
    principal = ex.principal
    assert principal is not None
    if principal.pinned_channel is not None:
        return set()
    levels = gw.snapshot.levels(principal.group, ex.model)
    if sum(len(level) for level in levels) >= MEMO_MIN_CHANNELS:
        by_type = _by_type.get(levels, None, lambda: channels_by_type(levels))
    else:
        by_type = channels_by_type(levels)
    unable: set[int] = set()
    kinds: set[tuple[int, Provider | None]] = set()
    total = 0
    for channel_type, ids in by_type.items():
        total += len(ids)
        provider = gw.providers.get(channel_type)
        if provider is None or not op.serves(provider, channel_type):
            unable.update(ids)
            kinds.add((channel_type, provider))
    if total and len(unable) == total:
        channel_type, provider = min(kinds, key=lambda k: k[0])
        raise cannot_serve(ex, op, channel_type, provider)
    return unable


def _unable_at_start(ex: Exchange, op: Operation) -> set[int]:
    """:func:`unable_channels` for ``op``: admission's set when it was found for the same
    operation and the model's routing levels are still those it read (nothing reloaded them
    while admission awaited the ledger), else found again. Taken once: the attempts add to it."""
    known, ex.unable_at_admission = ex.unable_at_admission, None
    if known is not None:
        operation, levels, unable = known
        principal = ex.principal
        assert principal is not None
        if operation is op and levels is ex.gateway.snapshot.levels(principal.group, ex.model):
            return unable
    return unable_channels(ex, op)


def cannot_serve(ex: Exchange, op: Operation, channel_type: int, provider: Provider | None) -> GatewayError:
    """Why a channel of ``channel_type`` cannot take the request, naming the endpoint: a 400
    when its provider does not serve it, a 503 (the operator's to fix) when no installed
    plugin serves the type at all."""
    if provider is None:
        return GatewayError(503, f"no channel for model `{ex.model}` can serve the {op.endpoint} endpoint: "
                                 f"channel type {channel_type} has no provider plugin installed",
                            code="channel:invalid_type")
    return GatewayError(400, f"no channel for model `{ex.model}` serves the {op.endpoint} endpoint "
                             f"(channel type {channel_type}, {provider.name}, does not)",
                        type="invalid_request_error", code="endpoint_not_supported", param="model")


async def upstream_target(channel: ChannelEntry, provider: Provider, model: str, *, stream: bool,
                          client_headers: Mapping[str, str], key: str | None = None) -> UpstreamTarget:
    """Where and as whom one call to ``channel`` goes: its base URL (else the provider's
    default), ``key`` (else one of its keys), turned into the upstream's credential where
    the provider needs a token exchange. ``model`` is the upstream's name (after the
    channel's mapping). A multi-key channel offers only its enabled keys, rotated or at
    random by its mode."""
    target = UpstreamTarget(base_url=channel.base_url or provider.default_base_url,
                            key=channel.pick_key() if key is None else key, model=model, stream=stream,
                            channel_type=channel.type, other=channel.other, settings=channel.setting,
                            client_headers=client_headers)
    if provider.prepare_credential is not None:
        target.key = await provider.prepare_credential(target)
    return target


def choose(ex: Exchange, attempt: int, excluded: set[int]) -> ChannelEntry | None:
    """The attempt's channel: one not cooling down; when every candidate cools down, the
    one whose cooldown ends first (its half-open trial), rather than refusing the request."""
    gw = ex.gateway
    principal = ex.principal
    assert principal is not None
    pinned = principal.pinned_channel
    if pinned is not None:
        channel = gw.snapshot.channels.get(pinned)
        if channel is None or channel.status != m.CHANNEL_ENABLED:
            raise GatewayError(403, "the pinned channel is disabled or does not exist", code="access_denied")
        return channel
    levels = gw.snapshot.levels(principal.group, ex.model)
    filters, selectors = gw.channel_filters, gw.channel_selectors
    if not gw.breakers.states:  # nothing has failed in this worker: no work
        return select_channel(levels, attempt, excluded, ex, filters, selectors)
    breakers, now = gw.breakers, time.monotonic()
    count = sum(len(level) for level in levels)
    if count >= MEMO_MIN_CHANNELS and len(breakers.states) < count:  # the failing few, not every channel
        cooling = breakers.cooling_of(_by_id.get(levels, None, lambda: channels_by_id(levels)), excluded, now)
    else:
        cooling = breakers.cooling((c for level in levels for c in level), excluded, now)
    if not cooling:
        return select_channel(levels, attempt, excluded, ex, filters, selectors)
    chosen = select_channel(levels, attempt, excluded | cooling.keys(), ex, filters, selectors)
    if chosen is not None:
        return chosen
    for channel_id in sorted(cooling, key=cooling.__getitem__):
        others = excluded | (cooling.keys() - {channel_id})
        chosen = select_channel(levels, attempt, others, ex, filters, selectors)
        if chosen is not None:
            log.warning("every channel of %s cools down: trying channel %s, whose cooldown ends first",
                        ex.model, chosen.id)
            return chosen
    return None
