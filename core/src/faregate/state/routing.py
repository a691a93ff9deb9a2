"""The routing index: group → model → priority levels (highest first), each level the enabled
channels of that priority, by id. Kept with which (group, model) pairs each channel's enabled
abilities name, so a change to one channel recomputes only the pairs it was or is in: with
10,000 channels a change is a few small lists, not a pass over every ability."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from faregate.db import models as m

if TYPE_CHECKING:
    from faregate.state.snapshot import ChannelEntry

#: (group, model): one entry of the routing index
Pair = tuple[str, str]
Routes = dict[str, dict[str, list[list["ChannelEntry"]]]]


class RouteIndex:
    """A pair's levels are replaced (a new list), never edited: a request that read them
    before a change keeps a consistent list, and ``levels is snapshot.levels(...)`` tells
    whether anything reloaded them since (see ``faregate.exchange.attempts``)."""

    def __init__(self) -> None:
        self.routes: Routes = {}
        #: channel id → the pairs of its enabled abilities (whatever the channel's status)
        self.pairs_of: dict[int, frozenset[Pair]] = {}
        #: pair → the ids of the channels with an enabled ability for it
        self.members: dict[Pair, set[int]] = {}
        #: how many pairs were recomputed (whole builds included): what a test of incrementality counts
        self.recomputed = 0

    @classmethod
    def build(cls, abilities: Iterable[tuple[int, str, str]], channels: Mapping[int, ChannelEntry]) -> RouteIndex:
        """The whole index from every enabled ability, as ``(channel_id, group, model)``."""
        index = cls()
        by_channel: dict[int, set[Pair]] = {}
        for channel_id, group, model in abilities:
            by_channel.setdefault(channel_id, set()).add((group, model))
        index.update(by_channel, channels)
        return index

    def update(self, pairs_by_channel: Mapping[int, Iterable[Pair]], channels: Mapping[int, ChannelEntry]) -> None:
        """Channels whose row or abilities changed, each with the pairs of its enabled abilities
        now (none for a deleted channel); ``channels`` holds their new entries."""
        touched: set[Pair] = set()
        for channel_id, pairs in pairs_by_channel.items():
            new = frozenset(pairs)
            old = self.pairs_of.pop(channel_id, frozenset())
            if new:
                self.pairs_of[channel_id] = new
            for pair in old - new:
                members = self.members[pair]
                members.discard(channel_id)
                if not members:
                    del self.members[pair]
            for pair in new - old:
                self.members.setdefault(pair, set()).add(channel_id)
            touched |= old | new
        for pair in touched:
            self._recompute(pair, channels)

    def refresh(self, channel_id: int, channels: Mapping[int, ChannelEntry]) -> None:
        """Recompute the pairs of one channel whose entry changed in place (its status)."""
        for pair in self.pairs_of.get(channel_id, ()):
            self._recompute(pair, channels)

    def _recompute(self, pair: Pair, channels: Mapping[int, ChannelEntry]) -> None:
        self.recomputed += 1
        group, model = pair
        by_priority: dict[int, list[ChannelEntry]] = {}
        for channel_id in self.members.get(pair, ()):
            channel = channels.get(channel_id)
            if channel is not None and channel.status == m.CHANNEL_ENABLED:
                by_priority.setdefault(channel.priority, []).append(channel)
        by_model = self.routes.get(group)
        if by_priority:
            if by_model is None:
                by_model = self.routes[group] = {}
            by_model[model] = [sorted(by_priority[p], key=lambda c: c.id) for p in sorted(by_priority, reverse=True)]
        elif by_model is not None:
            by_model.pop(model, None)
            if not by_model:
                del self.routes[group]
