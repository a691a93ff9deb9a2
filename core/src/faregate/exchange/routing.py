"""Channel choice: highest priority first, weighted random within a priority
(new-api's rules), stepping down a priority level per retry and never re-picking a
channel that already failed for this request."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

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


T = TypeVar("T")

#: below this many channels a level's weights are summed per request (cheaper than a lookup)
MEMO_MIN_CHANNELS = 32


class ListMemo(Generic[T]):
    """Values derived from a channel list, found once per list and kept by the list's identity.
    Sound for the routing index's levels: it replaces a level's list whenever a channel in it
    changes and never edits one (:mod:`faregate.state.routing`); a kept entry holds its list,
    so no other list can take its id meanwhile. Bounded: emptied when full."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._values: dict[tuple[int, Hashable], tuple[object, T]] = {}

    def get(self, of: object, key: Hashable, make: Callable[[], T]) -> T:
        entry = self._values.get((id(of), key))
        if entry is not None and entry[0] is of:
            return entry[1]
        value = make()
        if len(self._values) >= self.size:
            self._values.clear()
        self._values[(id(of), key)] = (of, value)
        return value


class Chooser(Protocol):
    """What :func:`weighted_pick` draws with: a ``random.Random`` or the ``random`` module."""

    def choice(self, seq: Sequence[ChannelEntry], /) -> ChannelEntry: ...

    def choices(self, population: Sequence[ChannelEntry], /, weights: Sequence[float] | None = None, *,
                cum_weights: Sequence[float] | None = None, k: int = 1) -> list[ChannelEntry]: ...


def cumulative_weights(channels: Sequence[ChannelEntry]) -> list[int] | None:
    """new-api's weights, running total: all zero → None (equal chances); a small average
    weight is scaled up so weight 0 channels keep a small chance."""
    weights = [max(0, c.weight) for c in channels]
    total = sum(weights)
    if total == 0:
        return None
    scale = 100 if total / len(weights) < 10 else 1
    running, cumulative = 0, []
    for w in weights:
        running += w * scale + 10  # weight 0 still gets picked now and then
        cumulative.append(running)
    return cumulative


#: a big level's running weights: a pick is then a bisection, not a pass over 10,000 channels
_cumulative = ListMemo[list[int] | None]()


def weighted_pick(channels: Sequence[ChannelEntry], rng: Chooser | None = None) -> ChannelEntry:
    rng = rng or random
    if len(channels) == 1:
        return channels[0]
    if len(channels) >= MEMO_MIN_CHANNELS:
        cumulative = _cumulative.get(channels, None, lambda: cumulative_weights(channels))
    else:
        cumulative = cumulative_weights(channels)
    if cumulative is None:
        return rng.choice(channels)
    return rng.choices(channels, cum_weights=cumulative, k=1)[0]


#: a big level's weights by channel id, and their sum (what an exclusion takes out of it)
_weights_by_id = ListMemo[tuple[dict[int, int], int]]()


def _weights(level: Sequence[ChannelEntry]) -> tuple[dict[int, int], int]:
    weights = {c.id: max(0, c.weight) for c in level}
    return weights, sum(weights.values())
#: a redrawn pick lands on an excluded channel at most this often before the list is filtered
REDRAWS = 16


def pick_excluding(level: Sequence[ChannelEntry], excluded: set[int], rng: Chooser | None = None) -> (
        ChannelEntry | None):
    """:func:`weighted_pick` over the channels of a big ``level`` not in ``excluded``, without
    building that list (a request retrying, or a channel cooling down, among 10,000): a draw
    from the whole level's kept weights, drawn again when it lands on an excluded channel.
    That is the same chance for each channel as a pick over the filtered list whenever its
    weights are scaled as the whole level's are (checked: ``cumulative_weights`` scales by the
    average weight); otherwise, or when most of the level's weight is excluded, None: the
    caller filters the list as before."""
    weights, total = _weights_by_id.get(level, None, lambda: _weights(level))
    gone = [weights[i] for i in excluded if i in weights]
    left = len(level) - len(gone)
    if left <= 0:
        return None
    total_left = total - sum(gone)
    if (total == 0) != (total_left == 0):
        return None  # one side picks with equal chances, the other by weight
    if total and (total / len(level) < 10) != (total_left / left < 10):
        return None  # scaled differently (see cumulative_weights)
    if len(gone) * 2 > len(level):
        return None  # mostly excluded: redraws would rarely land
    for _ in range(REDRAWS):
        chosen = weighted_pick(level, rng)
        if chosen.id not in excluded:
            return chosen
    return None


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
        level = levels[index]
        if excluded and not filters and len(level) >= MEMO_MIN_CHANNELS and _default_only(selectors):
            chosen = pick_excluding(level, excluded)
            if chosen is not None:
                return chosen
        # the level itself when nothing is excluded or filtered (a filter may edit what it is
        # given): what weighted_pick's memo knows
        candidates = [c for c in level if c.id not in excluded] if excluded or filters else level
        for flt in filters:
            candidates = flt.filter(candidates, ctx)
        if not candidates:
            continue
        for selector in selectors:
            chosen = selector.select(candidates, ctx)
            if chosen is not None:
                return chosen
    return None


def _default_only(selectors: Sequence[ChannelSelector]) -> bool:
    """Whether the core's selector alone chooses (another is handed the filtered list)."""
    return len(selectors) == 1 and type(selectors[0]) is DefaultSelector
