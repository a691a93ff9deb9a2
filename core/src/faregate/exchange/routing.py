"""Channel choice: highest priority first, weighted random within a priority
(new-api's rules), stepping down a priority level per retry and never re-picking a
channel that already failed for this request."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from faregate.errors import GatewayError
from faregate.state.snapshot import ChannelEntry

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange
    from faregate.exchange.policies import ChannelFilter, ChannelSelector


def map_model(mapping: dict[str, str], model: str) -> str:
    """Follow a channel's model mapping (chains A→B→C allowed; a cycle is an error)."""
    seen = {model}
    current = model
    while current in mapping:
        nxt = mapping[current]
        if not nxt or nxt == current:
            break
        if nxt in seen:
            raise GatewayError(500, f"model mapping for {model} has a cycle", code="channel:model_mapped_error")
        seen.add(nxt)
        current = nxt
    return current


class Chooser(Protocol):
    """What :func:`weighted_pick` draws with: a ``random.Random`` or the ``random`` module."""

    def choice(self, seq: Sequence[ChannelEntry], /) -> ChannelEntry: ...

    def choices(self, population: Sequence[ChannelEntry], /, weights: Sequence[float] | None = None, *,
                k: int = 1) -> list[ChannelEntry]: ...


def weighted_pick(channels: Sequence[ChannelEntry], rng: Chooser | None = None) -> ChannelEntry:
    """new-api's weights: all zero → equal; a small average weight is scaled up so
    weight 0 channels keep a small chance."""
    rng = rng or random
    if len(channels) == 1:
        return channels[0]
    weights = [max(0, c.weight) for c in channels]
    total = sum(weights)
    if total == 0:
        return rng.choice(list(channels))
    if total / len(weights) < 10:
        weights = [w * 100 for w in weights]
    weights = [w + 10 for w in weights]  # weight 0 still gets picked now and then
    return rng.choices(list(channels), weights=weights, k=1)[0]


class DefaultSelector:
    """Priority then weighted random; the core's fallback selector."""

    def select(self, candidates: list[ChannelEntry], ctx: Exchange) -> ChannelEntry | None:
        return weighted_pick(candidates) if candidates else None


def level_order(n_levels: int, attempt: int) -> list[int]:
    """Attempt k starts at priority level k (clamped) and goes down, then tries the
    higher levels it skipped."""
    start = min(attempt, n_levels - 1)
    return list(range(start, n_levels)) + list(range(0, start))


def select_channel(levels: list[list[ChannelEntry]], attempt: int, excluded: set[int], ctx: Exchange,
                   filters: Sequence[ChannelFilter], selectors: Sequence[ChannelSelector]) -> ChannelEntry | None:
    if not levels:
        return None
    for index in level_order(len(levels), attempt):
        candidates = [c for c in levels[index] if c.id not in excluded]
        for flt in filters:
            candidates = flt.filter(candidates, ctx)
        if not candidates:
            continue
        for selector in selectors:
            chosen = selector.select(candidates, ctx)
            if chosen is not None:
                return chosen
    return None
