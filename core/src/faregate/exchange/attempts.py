"""The attempt loop: choose a channel, rewrite, build and send the upstream request,
classify what comes back; retry on another channel (excluding the failed one), or
disable a channel whose key is dead. What a 200 becomes is the endpoint kind's
:class:`Operation`'s business."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from faregate.contracts import WEBSOCKET, Provider, UpstreamRequest, UpstreamTarget
from faregate.db import models as m
from faregate.errors import GatewayError, model_not_found, shield
from faregate.exchange.routing import map_model, select_channel
from faregate.hooks import await_me_maybe
from faregate.upstream import UpstreamResponse, UpstreamTransportError

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange
    from faregate.exchange.inbound import Outcome
    from faregate.state.snapshot import ChannelEntry

log = logging.getLogger("faregate.relay")

MAX_ERROR_BODY = 1 << 20


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
        """Turn the upstream's 200 (101) into the client's outcome (settling the exchange, now
        or when a stream ends); raise :class:`AttemptFailed` to try another channel."""
        ...


async def run_attempts(ex: Exchange, op: Operation) -> Outcome:
    gw = ex.gateway
    options = gw.snapshot.options
    principal = ex.principal
    summary = ex.summary
    assert principal is not None and summary is not None, "admit before relaying"
    excluded = unable_channels(ex, op)
    last_error: GatewayError | None = None
    original_body, original_raw = ex.body, ex.raw
    attempts = 1 if principal.pinned_channel is not None else options.retry_times + 1
    for attempt in range(attempts):
        ex.attempt = attempt
        channel = choose(ex, attempt, excluded)
        if channel is None:
            break
        ex.channel = channel
        ex.tried.append(channel.id)
        provider = gw.providers.get(channel.type)
        if provider is None or not op.serves(provider, channel.type):  # a pinned channel: not filtered beforehand
            excluded.add(channel.id)
            last_error = cannot_serve(ex, op, channel.type, provider)
            continue
        ex.upstream_model = map_model(channel.model_mapping, ex.model)
        if attempt:
            ex.restart_attempt(original_body, original_raw)
        for rewriter in gw.request_rewriters:
            await await_me_maybe(rewriter.rewrite(ex))
        try:
            target = await upstream_target(channel, provider, ex.upstream_model, stream=summary.stream,
                                           client_headers=ex.request.headers)
            ex.secrets = (*channel.keys, target.key)
            passthrough = provider.native_format == ex.format.name and not channel.setting.get("force_convert")
            upstream_req = op.build(ex, provider, target, passthrough)
        except GatewayError as refused:
            if not (refused.code or "").startswith("channel:"):
                raise  # the request's own problem: no other channel would take it either
            # the channel's configuration (a malformed key …): the operator's to fix, another may serve
            log.warning("channel %s cannot be called: %s", channel.id, refused.message)
            excluded.add(channel.id)
            last_error = refused
            continue
        apply_header_override(upstream_req, channel.header_override, target.key)
        sent = time.perf_counter()
        # a WEBSOCKET request (a realtime session) is an upgrade: 101 is its success
        websocket = upstream_req.method == WEBSOCKET
        try:
            if websocket:
                resp: UpstreamResponse = await gw.upstream.websocket(upstream_req)
            else:
                resp = await gw.upstream.send(upstream_req, stream=summary.stream)
        except UpstreamTransportError as exc:
            ex.upstream_seconds += time.perf_counter() - sent
            log.warning("channel %s: request failed: %s", channel.id, exc)
            last_error = GatewayError(500, "upstream error: do request failed", code="do_request_failed",
                                      upstream=True)
            excluded.add(channel.id)
            continue
        ex.answer_at = time.perf_counter()
        ex.upstream_seconds += ex.answer_at - sent
        if resp.status_code != (101 if websocket else 200):
            err = await upstream_error(ex, provider, resp, channel)
            ex.upstream_seconds += time.perf_counter() - ex.answer_at
            ex.answer_at = 0.0
            excluded.add(channel.id)
            last_error = err
            if not options.should_retry_status(err.status) or err.code == "bad_response_body":
                raise err
            continue
        try:
            return await op.finish(ex, provider, resp, passthrough)
        except AttemptFailed as failed:
            ex.upstream_seconds += time.perf_counter() - ex.answer_at if ex.answer_at else 0.0
            ex.answer_at = 0.0
            last_error = failed.error
            excluded.add(channel.id)
    if last_error is not None:
        raise last_error
    raise model_not_found(ex.model, principal.group)


def unable_channels(ex: Exchange, op: Operation) -> set[int]:
    """The channels of this request's model whose type has no provider loaded or whose
    provider does not serve the endpoint: never chosen, so no attempt is spent on them.
    Raises when that leaves none, naming the endpoint."""
    gw = ex.gateway
    principal = ex.principal
    assert principal is not None
    if principal.pinned_channel is not None:
        return set()
    unable: set[int] = set()
    kinds: set[tuple[int, Provider | None]] = set()
    total = 0
    for level in gw.snapshot.levels(principal.group, ex.model):
        for channel in level:
            total += 1
            provider = gw.providers.get(channel.type)
            if provider is None or not op.serves(provider, channel.type):
                unable.add(channel.id)
                kinds.add((channel.type, provider))
    if total and len(unable) == total:
        channel_type, provider = min(kinds, key=lambda k: k[0])
        raise cannot_serve(ex, op, channel_type, provider)
    return unable


def cannot_serve(ex: Exchange, op: Operation, channel_type: int, provider: Provider | None) -> GatewayError:
    if provider is None:
        return GatewayError(503, f"channel type {channel_type} has no provider plugin loaded",
                            code="channel:invalid_type")
    return GatewayError(400, f"no channel for model `{ex.model}` serves the {op.endpoint} endpoint "
                             f"(channel type {channel_type}, {provider.name}, does not)",
                        type="invalid_request_error", code="endpoint_not_supported", param="model")


async def upstream_target(channel: ChannelEntry, provider: Provider, model: str, *, stream: bool,
                          client_headers: Mapping[str, str]) -> UpstreamTarget:
    """Where and as whom one call to ``channel`` goes: its base URL (else the provider's
    default), one of its keys, turned into the upstream's credential where the provider
    needs a token exchange. ``model`` is the upstream's name (after the channel's mapping).
    A multi-key channel offers only its enabled keys, rotated or at random by its mode."""
    target = UpstreamTarget(base_url=channel.base_url or provider.default_base_url, key=channel.pick_key(),
                            model=model, stream=stream, channel_type=channel.type, other=channel.other,
                            settings=channel.setting, client_headers=client_headers)
    if provider.prepare_credential is not None:
        target.key = await provider.prepare_credential(target)
    return target


def choose(ex: Exchange, attempt: int, excluded: set[int]) -> ChannelEntry | None:
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
    return select_channel(levels, attempt, excluded, ex, gw.channel_filters, gw.channel_selectors)


async def upstream_error(ex: Exchange, provider: Provider, resp: UpstreamResponse,
                         channel: ChannelEntry) -> GatewayError:
    """Read and classify an upstream's error answer; auto-disable a dead key's channel."""
    try:
        body = await resp.aread(MAX_ERROR_BODY)
    except UpstreamTransportError:
        body = b""
    finally:
        await resp.aclose()
    gw = ex.gateway
    status = resp.status_code
    err = shield(provider.parse_error(status, body), ex.secrets, status)
    err.upstream = True
    read_retry_headers(err, resp.headers)
    mapped = channel.status_code_mapping.get(str(status))
    if mapped:
        with contextlib.suppress(ValueError):
            err.status = int(mapped)
    options = gw.snapshot.options
    if channel.auto_ban and options.auto_disable and options.should_disable(status, err):
        gw.snapshot.drop_channel(channel.id)  # this worker stops routing to it now
        gw.spawn(gw.disable_channel(channel.id, f"upstream answered {status}"))
    log.warning("channel %s answered %s (%s): %s", channel.id, status, err.code, err.detail)
    return err


def read_retry_headers(err: GatewayError, headers: Mapping[str, str]) -> None:
    """What the upstream said about retrying, for the client: ``retry-after-ms`` (more
    precise, OpenAI's), else ``retry-after`` seconds; ``x-should-retry``."""
    with contextlib.suppress(ValueError):
        if headers.get("retry-after-ms"):
            err.retry_after = float(headers["retry-after-ms"]) / 1000
        elif headers.get("retry-after"):
            err.retry_after = float(headers["retry-after"])
    if err.retry_after is not None and not 0 <= err.retry_after <= 86_400:
        err.retry_after = None  # a date, or nonsense: not ours to relay
    should_retry = (headers.get("x-should-retry") or "").lower()
    if should_retry in ("true", "false"):
        err.should_retry = should_retry == "true"


def apply_header_override(req: UpstreamRequest, override: dict[str, str], key: str) -> None:
    for name, value in override.items():
        req.headers[name] = value.replace("{api_key}", key)
