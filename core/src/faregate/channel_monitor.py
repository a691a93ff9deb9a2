"""new-api's channel monitor: every ``monitor_setting.auto_test_channel_minutes`` minutes
(while ``monitor_setting.auto_test_channel_enabled``) every channel not disabled by hand is
tested the way ``GET /api/channel/test/{id}`` tests one. A failing enabled channel is disabled
(status 3, automatically) by the relay's own rules (``AutomaticDisableChannelEnabled``, the
channel's ``auto_ban``, ``AutomaticDisableStatusCodes`` …), and so is one slower than
``ChannelDisableThreshold`` seconds; an automatically disabled channel whose test passes is
enabled again when ``AutomaticEnableChannelEnabled``. A multi-key channel's keys are judged
one by one, the channel following them; the root user is told of each change the monitor makes.

Once per cluster, not per worker: every worker of every node polls, but only the holder of
the job's lease in the shared database runs a round (:mod:`faregate.db.cluster_jobs`); when
the holder dies, another worker takes the lease over once it expires (and runs again a round
the dead holder left unfinished)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from faregate.accounts.root_notice import channel_disabled, channel_enabled, notify_root
from faregate.db import models as m
from faregate.db.cluster_jobs import KEY_PREFIX, ClusterJob
from faregate.exchange.health import persist_key_disable
from faregate.exchange.key_states import rewrite_key
from faregate.management.channel_probe import probe_channel, refresh_balances
from faregate.state import option_specs as specs
from faregate.state.multi_keys import Key, is_multi_key, load_keys, read_info
from faregate.state.option_specs import OptionSpec
from faregate.state.snapshot import KEY_AUTO_DISABLED, KEY_ENABLED, KEY_MANUALLY_DISABLED

if TYPE_CHECKING:
    from faregate.errors import GatewayError
    from faregate.gateway import Gateway

log = logging.getLogger("faregate")

JOB_NAME = "channel_monitor"
#: the job's lease row (in the options table; not an option, never listed)
CLAIM_KEY = KEY_PREFIX + JOB_NAME
#: channels tested at once in a round
CONCURRENCY = 4

ENABLED = "monitor_setting.auto_test_channel_enabled"
MINUTES = "monitor_setting.auto_test_channel_minutes"

MONITOR_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(ENABLED, "false", "Test every channel not disabled by hand periodically (once per cluster), "
               "disabling failing ones and enabling recovered ones by the options below.", specs.boolean),
    OptionSpec(MINUTES, "10", "Minutes between two rounds of channel tests (rounded to whole minutes, as "
               "new-api does).", specs.number(1, 525_600)),
    OptionSpec("ChannelDisableThreshold", "5", "Seconds: a channel test slower than this disables the channel, "
               "when AutomaticDisableChannelEnabled (0: no limit).", specs.number(0, 86_400)),
    OptionSpec("AutomaticEnableChannelEnabled", "false", "The channel monitor enables again an automatically "
               "disabled channel whose test passes.", specs.boolean),
)


def period_seconds(minutes: float) -> float:
    return max(1, round(minutes)) * 60.0


def monitor_job(gw: Gateway) -> ClusterJob:
    """The rounds as a cluster job: every period while the monitor is on."""

    def period() -> float | None:
        options = gw.snapshot.options
        return period_seconds(options.value(MINUTES)) if options.value(ENABLED) else None

    async def run() -> None:
        log.info("channel monitor: testing every channel")
        await run_round(gw)

    return ClusterJob(JOB_NAME, period, run)


def balance_job(gw: Gateway, minutes: int) -> ClusterJob:
    """new-api's automatic balance refresh (``CHANNEL_UPDATE_FREQUENCY``): every channel's balance,
    as ``GET /api/channel/update_balance`` asks it, every ``minutes`` (0: never)."""

    async def run() -> None:
        counts = await refresh_balances(gw)
        log.info("channel balances refreshed: %s", ", ".join(f"{k} {v}" for k, v in counts.items()))

    return ClusterJob("channel_balances", lambda: minutes * 60.0 if minutes > 0 else None, run)


async def tick(gw: Gateway, now: float | None = None) -> bool:
    """Run a round if the monitor is on, the period is over and this worker holds the job's
    lease (one per cluster); True when it ran one."""
    return await gw.cluster_jobs.tick(monitor_job(gw), now)


async def run_round(gw: Gateway) -> None:
    """Test every channel not disabled by hand, a few at a time, and act on each result."""
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(row: m.Channel) -> None:
        async with limit:
            try:
                await check_channel(gw, row)
            except Exception:  # one channel's trouble never stops the round
                log.exception("channel monitor: testing channel %s failed", row.id)

    rows = await m.Channel.filter(status__in=(m.CHANNEL_ENABLED, m.CHANNEL_AUTO_DISABLED))
    await asyncio.gather(*(one(row) for row in rows))


async def check_channel(gw: Gateway, row: m.Channel) -> None:
    """new-api's rules for one tested channel: a test error the relay would disable for, or
    (with AutomaticDisableChannelEnabled) a test slower than ChannelDisableThreshold, disables
    an enabled channel whose ``auto_ban`` is on; a passing test enables an automatically
    disabled one when AutomaticEnableChannelEnabled."""
    if is_multi_key(read_info(row.channel_info)):
        await check_keys(gw, row)
        return
    started = time.perf_counter()
    failed, _ = await probe_channel(gw, row, None)
    seconds = time.perf_counter() - started
    options = gw.snapshot.options
    reason = _disable_reason(failed, options.should_disable(failed.status, failed) if failed else False,
                             seconds, options.auto_disable, float(options.value("ChannelDisableThreshold")))
    if failed is not None:
        log.warning("channel monitor: channel %s failed its test: %s", row.id, failed.message)
    # the root is told once per change: only the call that changed the row tells
    if row.status == m.CHANNEL_ENABLED and reason and row.auto_ban and options.auto_disable:
        if await gw.disable_channel(row.id, f"channel monitor: {reason}"):
            await notify_root(gw.notifiers, gw.spawn, channel_disabled(row.name, row.id, reason))
    elif (row.status == m.CHANNEL_AUTO_DISABLED and failed is None and not reason
          and options.value("AutomaticEnableChannelEnabled")):
        if await enable_channel(gw, row.id):
            await notify_root(gw.notifiers, gw.spawn, channel_enabled(row.name, row.id))


async def check_keys(gw: Gateway, row: m.Channel) -> None:
    """A multi-key channel: each key not disabled by hand is tested on its own and disabled or
    enabled again by the same rules as a channel; the channel follows its keys (disabled when
    none is left enabled, enabled again with the first that passes)."""
    options = gw.snapshot.options
    for key in load_keys(gw.box.decrypt(row.key_enc, f"channel:{row.id}"), read_info(row.channel_info)):
        if key.status == KEY_MANUALLY_DISABLED:
            continue
        started = time.perf_counter()
        failed, _ = await probe_channel(gw, row, None, key=key.text)
        seconds = time.perf_counter() - started
        reason = _disable_reason(failed, options.should_disable(failed.status, failed) if failed else False,
                                 seconds, options.auto_disable, float(options.value("ChannelDisableThreshold")))
        if key.status == KEY_ENABLED and reason and row.auto_ban and options.auto_disable:
            if await persist_key_disable(gw, row.id, key.text, f"channel monitor: {reason}"):
                await notify_root(gw.notifiers, gw.spawn, channel_disabled(row.name, row.id, reason))
        elif (key.status == KEY_AUTO_DISABLED and failed is None and not reason
              and options.value("AutomaticEnableChannelEnabled")):
            if await enable_key(gw, row.id, key.text):
                await notify_root(gw.notifiers, gw.spawn, channel_enabled(row.name, row.id))


async def enable_key(gw: Gateway, channel_id: int, key: str) -> bool:
    """Enable an automatically disabled key of a multi-key channel, and the channel with it
    when it was disabled automatically; True when the channel was enabled again."""

    def enable(keys: list[Key], index: int, channel_status: int) -> int | None:
        keys[index] = Key(key)
        return m.CHANNEL_ENABLED if channel_status == m.CHANNEL_AUTO_DISABLED else None

    written = await rewrite_key(gw, channel_id, key, KEY_AUTO_DISABLED, enable)
    if written is None:
        return False
    index, channel_back = written
    log.warning("channel %s key #%s enabled again: the channel monitor's test passed%s", channel_id, index,
                " (channel enabled again)" if channel_back else "")
    return channel_back


def _disable_reason(failed: GatewayError | None, disables: bool, seconds: float, auto_disable: bool,
                    threshold: float) -> str:
    """Why the test disables the channel ("" : it does not)."""
    if failed is not None and disables:
        return f"its test failed: {failed.message}"
    if auto_disable and threshold > 0 and seconds > threshold:
        return f"its test took {seconds:.2f} s, over ChannelDisableThreshold ({threshold:g} s)"
    return ""


async def enable_channel(gw: Gateway, channel_id: int) -> bool:
    """Enable an automatically disabled channel (never one disabled by hand), on every worker;
    True when this call did."""
    changed = await m.Channel.filter(id=channel_id, status=m.CHANNEL_AUTO_DISABLED).update(status=m.CHANNEL_ENABLED)
    if changed:
        await m.Ability.filter(channel_id=channel_id).update(enabled=True)
        log.warning("channel %s enabled again: the channel monitor's test passed", channel_id)
        await gw.feed.publish("channel", channel_id)
    return bool(changed)
