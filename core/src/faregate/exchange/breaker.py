"""Routing that heals: a channel (or one key of a multi-key channel) that fails cools down
for an exponentially growing time, then gets one half-open trial; success closes it,
failure doubles the cooldown (``ChannelCooldownBaseSeconds`` up to
``ChannelCooldownMaxSeconds``). new-api disables such a channel for good; here only a dead
key is disabled (a channel's, or one key of a multi-key channel), and only when
``AutomaticDisableChannelEnabled`` and the channel's ``auto_ban`` say so. Dead, as new-api's
rules read an error answer (:meth:`faregate.exchange.options.RelayOptions.should_disable`): a status
of ``AutomaticDisableStatusCodes`` (401 and 403 by default; statuses and ranges), an error
code of a dead key (``invalid_api_key``, ``account_deactivated``, ``billing_not_active``,
``Arrearage``), an error type of one (``insufficient_quota``, ``insufficient_user_quota``,
``authentication_error``, ``permission_error``, ``forbidden``), or a phrase of
``AutomaticDisableKeywords`` in the message (by default "Your credit balance is too low",
"You exceeded your current quota", "Permission denied" …). Everything else cools down.

The state is per worker, in memory: reading it costs a dict lookup, never a database or
Redis round trip, and a worker that has seen nothing fail does no work at all
(:attr:`Breakers.states` empty). It is deliberately not shared across workers or hosts:
each worker pays at most one failed attempt per cooldown before it learns on its own (and
that attempt fails over within its request), while sharing would cost a network read per
choice or a fan-out whose lag is of the same order, and a shared half-open trial would
need a lock. Permanent disables still reach every worker through the database and the
change feed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from faregate.state.snapshot import ChannelEntry

log = logging.getLogger("faregate.relay")

#: the breaker of a whole channel is keyed by its id and this empty key
CHANNEL = ""


@dataclass(slots=True)
class Breaker:
    """One channel's (or key's) state: ``trips`` in a row, closed again by a success."""

    trips: int = 0
    #: monotonic time until which it is skipped
    open_until: float = 0.0
    #: a half-open trial is out until then (one at a time)
    trial_until: float = 0.0


#: told of each trip: ``(channel id, "channel" | "key")``
TripListener = Callable[[int, str], None]


class Breakers:
    """Every breaker of one worker, keyed by ``(channel id, key)`` (``key`` is
    :data:`CHANNEL` for the channel as a whole). The key's text keys it, not its index:
    indices move when keys are deleted, and the text is in this worker's memory anyway."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, trial_window: float = 60.0) -> None:
        self.clock = clock
        #: how long one half-open trial keeps the others away (its result normally comes first)
        self.trial_window = trial_window
        self.states: dict[tuple[int, str], Breaker] = {}
        self.listeners: list[TripListener] = []

    # ---- reading (hot path) -------------------------------------------------------------
    def _blocked_until(self, state: Breaker | None, now: float) -> float:
        if state is None:
            return 0.0
        if state.open_until > now:
            return state.open_until
        return state.trial_until if state.trial_until > now else 0.0

    def channel_blocked(self, channel: ChannelEntry, now: float) -> float:
        """When ``channel`` may be tried again (0.0: now): its own cooldown or trial, or
        that of every one of its keys."""
        states = self.states
        until = self._blocked_until(states.get((channel.id, CHANNEL)), now)
        if until or not channel.multi_key:
            return until
        soonest = 0.0
        for key in channel.keys:
            key_until = self._blocked_until(states.get((channel.id, key)), now)
            if not key_until:
                return 0.0
            soonest = key_until if not soonest else min(soonest, key_until)
        return soonest

    def cooling(self, channels: Iterable[ChannelEntry], excluded: set[int], now: float) -> dict[int, float]:
        """The channels among ``channels`` (not ``excluded``) that may not be tried now, with
        when each may be; empty (and no work) while nothing has failed."""
        if not self.states:
            return {}
        blocked: dict[int, float] = {}
        for channel in channels:
            if channel.id not in excluded:
                until = self.channel_blocked(channel, now)
                if until:
                    blocked[channel.id] = until
        return blocked

    def cooling_of(self, by_id: Mapping[int, ChannelEntry], excluded: set[int], now: float) -> dict[int, float]:
        """:meth:`cooling` for the channels of ``by_id``, found by passing over the breakers (the
        channels that failed lately, a few) instead of over every channel (10,000 in a big level)."""
        blocked: dict[int, float] = {}
        seen: set[int] = set()
        for channel_id, _key in self.states:
            if channel_id in seen or channel_id in excluded:
                continue
            seen.add(channel_id)
            channel = by_id.get(channel_id)
            if channel is not None:
                until = self.channel_blocked(channel, now)
                if until:
                    blocked[channel_id] = until
        return blocked

    def key_blocked(self, channel_id: int, key: str, now: float) -> bool:
        return bool(self.states) and bool(self._blocked_until(self.states.get((channel_id, key)), now))

    def cooling_count(self) -> int:
        """Channels and keys in their cooldown now (the metrics' gauge)."""
        now = self.clock()
        return sum(1 for state in self.states.values() if state.open_until > now)

    # ---- what an attempt reports ----------------------------------------------------------
    def begin(self, channel_id: int, key: str) -> None:
        """An attempt goes to ``channel_id`` with ``key``: a breaker past its cooldown (or one
        forced because everything cools down) hands out its one half-open trial."""
        if not self.states:
            return
        now = self.clock()
        for ref in ((channel_id, CHANNEL), (channel_id, key)):
            state = self.states.get(ref)
            if state is not None:
                state.trial_until = now + self.trial_window

    def release(self, channel_id: int, key: str) -> None:
        """The attempt ended without a verdict (the client left, the upstream answered a
        request error): its trial, if it held one, is free for the next request."""
        if not self.states:
            return
        for ref in ((channel_id, CHANNEL), (channel_id, key)):
            state = self.states.get(ref)
            if state is not None:
                state.trial_until = 0.0

    def success(self, channel_id: int, key: str) -> None:
        """The attempt was answered: close its breakers."""
        if not self.states:
            return
        for ref, what in (((channel_id, CHANNEL), "channel"), ((channel_id, key), "key")):
            state = self.states.pop(ref, None)
            if state is not None:
                log.warning("channel %s recovered after %s failure(s) in a row (%s breaker closed)",
                            channel_id, state.trips, what)

    def trip(self, channel_id: int, key: str, reason: str, *, base: float, cap: float,
             retry_after: float | None = None, label: str = "") -> float:
        """A failure: open the breaker of ``(channel_id, key)`` (``key`` :data:`CHANNEL` for
        the whole channel) for ``base · 2^(trips-1)`` seconds, at most ``cap``, at least the
        upstream's ``retry_after`` (within ``cap``). Returns the cooldown. ``label`` names
        the key in the log (never the key itself)."""
        now = self.clock()
        state = self.states.get((channel_id, key))
        if state is None:
            state = self.states[(channel_id, key)] = Breaker()
        state.trips += 1
        cooldown = min(base * (1 << min(state.trips - 1, 60)), cap)
        if retry_after:
            cooldown = max(cooldown, min(retry_after, cap))
        state.open_until = now + cooldown
        state.trial_until = 0.0
        what = "key" if key else "channel"
        log.warning("channel %s%s cools down for %.1f s (failure %d in a row): %s", channel_id,
                    f" key {label}" if label else "", cooldown, state.trips, reason)
        for listener in self.listeners:
            listener(channel_id, what)
        return cooldown

    def forget(self, channel_id: int) -> None:
        """Drop a channel's breakers (it was disabled or deleted)."""
        for ref in [ref for ref in self.states if ref[0] == channel_id]:
            del self.states[ref]
