"""new-api's channel monitor: every ``monitor_setting.auto_test_channel_minutes`` minutes
(while ``monitor_setting.auto_test_channel_enabled``) every channel not disabled by hand is
tested the way ``GET /api/channel/test/{id}`` tests one. A failing enabled channel is disabled
(status 3, automatically) by the relay's own rules (``AutomaticDisableChannelEnabled``, the
channel's ``auto_ban``, ``AutomaticDisableStatusCodes`` …), and so is one slower than
``ChannelDisableThreshold`` seconds; an automatically disabled channel whose test passes is
enabled again when ``AutomaticEnableChannelEnabled``.

Once per cluster, not per worker: every worker of every node polls, but each round is claimed
by a compare-and-set on a marker row in the shared database (the log retention's
:func:`~faregate.log_retention.claim_round`): the first worker whose poll finds the period
over takes the round, the others see it taken. Nothing is held between rounds, so a node that
dies (even mid-round) holds nothing up: the next period's round goes to whichever live worker
polls first."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from faregate.db import models as m
from faregate.log_retention import claim_round
from faregate.management.channel_probe import probe_channel
from faregate.state import option_specs as specs
from faregate.state.multi_keys import is_multi_key, read_info
from faregate.state.option_specs import OptionSpec

if TYPE_CHECKING:
    from faregate.errors import GatewayError
    from faregate.gateway import Gateway

log = logging.getLogger("faregate")

#: the marker row of the rounds (in the options table; not an option, never listed)
CLAIM_KEY = "faregate:channel_monitor:last_run"
#: how often each worker looks whether a round is due (a round starts at most this late)
POLL_SECONDS = 30.0
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


async def monitor_loop(gw: Gateway) -> None:
    """Every worker's poll; :func:`tick` runs a round when it is due and this worker claims it."""
    while True:
        await asyncio.sleep(POLL_SECONDS)
        try:
            await tick(gw)
        except Exception:
            log.exception("channel monitor failed")


async def tick(gw: Gateway, now: float | None = None) -> bool:
    """Run a round if the monitor is on, the period is over and this worker claims the round
    (one per cluster); True when it ran one."""
    options = gw.snapshot.options
    if not options.value(ENABLED):
        return False
    if not await claim_round(period_seconds(options.value(MINUTES)), now, key=CLAIM_KEY):
        return False
    log.info("channel monitor: testing every channel")
    await run_round(gw)
    return True


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
    started = time.perf_counter()
    failed, _ = await probe_channel(gw, row, None)
    seconds = time.perf_counter() - started
    options = gw.snapshot.options
    reason = _disable_reason(failed, options.should_disable(failed.status, failed) if failed else False,
                             seconds, options.auto_disable, float(options.value("ChannelDisableThreshold")))
    if failed is not None:
        log.warning("channel monitor: channel %s failed its test: %s", row.id, failed.message)
    if is_multi_key(read_info(row.channel_info)):
        return  # its keys are judged one by one where the relay meets them, not from one test
    if row.status == m.CHANNEL_ENABLED and reason and row.auto_ban and options.auto_disable:
        await gw.disable_channel(row.id, f"channel monitor: {reason}")
    elif (row.status == m.CHANNEL_AUTO_DISABLED and failed is None and not reason
          and options.value("AutomaticEnableChannelEnabled")):
        await enable_channel(gw, row.id)


def _disable_reason(failed: GatewayError | None, disables: bool, seconds: float, auto_disable: bool,
                    threshold: float) -> str:
    """Why the test disables the channel ("" : it does not)."""
    if failed is not None and disables:
        return f"its test failed: {failed.message}"
    if auto_disable and threshold > 0 and seconds > threshold:
        return f"its test took {seconds:.2f} s, over ChannelDisableThreshold ({threshold:g} s)"
    return ""


async def enable_channel(gw: Gateway, channel_id: int) -> None:
    """Enable an automatically disabled channel (never one disabled by hand), on every worker."""
    changed = await m.Channel.filter(id=channel_id, status=m.CHANNEL_AUTO_DISABLED).update(status=m.CHANNEL_ENABLED)
    if changed:
        await m.Ability.filter(channel_id=channel_id).update(enabled=True)
        log.warning("channel %s enabled again: the channel monitor's test passed", channel_id)
        await gw.feed.publish("channel", channel_id)
