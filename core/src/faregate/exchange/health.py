"""What a failed attempt does to its channel: read and classify the upstream's error answer,
then cool the channel (or the key) down, or disable a dead key's channel (new-api's
auto-disable rules, when ``AutomaticDisableChannelEnabled`` and the channel's ``auto_ban``
allow it). On a multi-key channel a dead key is disabled on its own, as new-api does; the
channel only when no key is left. The root user is told when the relay disabled a channel, in
the channel monitor's words (new-api's ``DisableChannel`` notifies the root)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from faregate.accounts.root_notice import channel_disabled, notify_root
from faregate.contracts import Provider
from faregate.db import models as m
from faregate.errors import KIND_BY_STATUS, GatewayError, shield
from faregate.exchange.breaker import CHANNEL
from faregate.exchange.key_states import rewrite_key
from faregate.upstream import UpstreamResponse, UpstreamTransportError

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange
    from faregate.exchange.host import ExchangeHost
    from faregate.state.multi_keys import Key
    from faregate.state.snapshot import ChannelEntry

log = logging.getLogger("faregate.relay")

MAX_ERROR_BODY = 1 << 20
#: how many times one channel's key is changed within a request (a 429, a dead key)
MAX_KEY_ROTATIONS = 3
#: conditional writes of a key's state retried when the channel changed meanwhile
#: a disable reason (logged, kept in a multi-key channel's key state) is cut to this length
MAX_REASON = 300


async def upstream_error(ex: Exchange, provider: Provider, resp: UpstreamResponse,
                         channel: ChannelEntry) -> GatewayError:
    """Read and classify an upstream's error answer (secrets redacted, the channel's
    status-code mapping applied: new-api's retry decisions see the mapped code)."""
    try:
        body = await resp.aread(MAX_ERROR_BODY)
    except UpstreamTransportError:
        body = b""
    finally:
        await resp.aclose()
    status = resp.status_code
    err = shield(provider.parse_error(status, body), ex.secrets, status)
    err.upstream = True
    read_retry_headers(err, resp.headers)
    mapped = mapped_status(channel.status_code_mapping, status)
    if mapped is not None:
        err.status = mapped
        if err.kind is not None:  # the operator's status says what the error now is
            err.kind = KIND_BY_STATUS.get(mapped, err.kind)
    log.warning("channel %s answered %s (%s): %s", channel.id, status, err.code, err.detail)
    return err


def mapped_status(mapping: Mapping[str, str], status: int) -> int | None:
    """The status ``status`` becomes by the channel's ``status_code_mapping`` (new-api's
    ResetStatusCode: what the client sees and what the retry decision reads); None when it
    maps nothing. A value that is not a whole number (``"503"``, ``503``, ``503.0``) of an
    HTTP status is ignored, as new-api ignores what it cannot parse."""
    value = mapping.get(str(status))
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    if not number.is_integer() or not 100 <= number <= 599:
        return None
    return int(number)


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


def key_label(channel: ChannelEntry, key: str) -> str:
    """How logs name a key of a multi-key channel: its index, never its text."""
    return f"#{channel.key_index.get(key, '?')}" if channel.multi_key else ""


def trip(gw: ExchangeHost, channel: ChannelEntry, key: str, reason: str, retry_after: float | None = None) -> None:
    """Cool ``channel`` down (``key`` :data:`~faregate.exchange.breaker.CHANNEL`), or one of its keys."""
    options = gw.snapshot.options
    if options.cooldown_base <= 0:
        return
    gw.breakers.trip(channel.id, key, reason, base=options.cooldown_base, cap=options.cooldown_max,
                     retry_after=retry_after, label=key_label(channel, key) if key else "")


def judge_answer(ex: Exchange, channel: ChannelEntry, key: str, status: int, err: GatewayError) -> bool:
    """What an upstream's error answer (``status`` as it came) does to the channel; True
    when another key of the same channel may answer instead (the failure was the key's)."""
    gw = ex.gateway
    options = gw.snapshot.options
    per_key = channel.multi_key
    if options.should_disable(status, err):
        if channel.auto_ban and options.auto_disable:
            reason = disable_reason(status, err)
            if per_key:
                disable_key(gw, channel, key, reason)
                return True
            gw.snapshot.drop_channel(channel.id)  # this worker stops routing to it now
            gw.breakers.forget(channel.id)
            gw.spawn(disable_and_tell(gw, channel.id, channel.name, reason))
            return False
        # a dead key the operator keeps enabled: skip it for a while rather than every request
        trip(gw, channel, key if per_key else CHANNEL, f"upstream answered {status} ({err.code})")
        return per_key
    if status == 429:
        trip(gw, channel, key if per_key else CHANNEL, "upstream answered 429 (rate limited)", err.retry_after)
        return per_key
    if status >= 500:
        trip(gw, channel, CHANNEL, f"upstream answered {status}", err.retry_after)
    return False


def disable_reason(status: int, err: GatewayError) -> str:
    """Why a channel (or key) was disabled, for the log line and the key's recorded reason:
    the status, the error's code and the upstream's words (the channel's keys redacted
    by :func:`faregate.errors.shield`), one line of at most :data:`MAX_REASON` characters."""
    said = " ".join((err.detail or err.message or "").split())
    reason = f"upstream answered {status}" + (f" ({err.code})" if err.code else "") + (f": {said}" if said else "")
    return reason if len(reason) <= MAX_REASON else reason[:MAX_REASON - 1] + "…"


def disable_key(gw: ExchangeHost, channel: ChannelEntry, key: str, reason: str) -> None:
    """Stop using one key of a multi-key channel in this worker now, and record it
    (``multi_key_status_list``: automatically disabled) for every worker."""
    if key in channel.keys:
        channel.keys = [k for k in channel.keys if k != key]
    if not channel.keys:
        gw.snapshot.drop_channel(channel.id)
        gw.breakers.forget(channel.id)
    gw.spawn(_disable_key(gw, channel.id, channel.name, key, reason))


async def disable_and_tell(gw: ExchangeHost, channel_id: int, name: str, reason: str) -> bool:
    """Disable the channel for every worker; the root is told when this call did (once per
    event: another worker's or the monitor's disable of it tells nobody again)."""
    if not await gw.disable_channel(channel_id, reason):
        return False
    await notify_root(gw.notifiers, gw.spawn, channel_disabled(name, channel_id, reason))
    return True


async def _disable_key(gw: ExchangeHost, channel_id: int, name: str, key: str, reason: str) -> None:
    """A key disabled for every worker; the root is told when it was the channel's last."""
    if await persist_key_disable(gw, channel_id, key, reason):
        await notify_root(gw.notifiers, gw.spawn, channel_disabled(name, channel_id, reason))


async def persist_key_disable(gw: ExchangeHost, channel_id: int, key: str, reason: str) -> bool:
    """Record the key as disabled automatically, for every worker; the channel itself is
    disabled when no enabled key is left. True when this call disabled the channel."""
    from faregate.state.snapshot import KEY_AUTO_DISABLED, KEY_ENABLED

    def disable(keys: list[Key], index: int, channel_status: int) -> int | None:
        keys[index].status, keys[index].reason, keys[index].time = KEY_AUTO_DISABLED, reason, int(time.time())
        none_left = all(k.status != KEY_ENABLED for k in keys)
        return m.CHANNEL_AUTO_DISABLED if none_left and channel_status == m.CHANNEL_ENABLED else None

    written = await rewrite_key(gw, channel_id, key, KEY_ENABLED, disable)
    if written is None:
        return False
    index, channel_disabled = written
    log.warning("channel %s key #%s disabled automatically: %s%s", channel_id, index, reason,
                " (no enabled key left: channel disabled)" if channel_disabled else "")
    return channel_disabled
