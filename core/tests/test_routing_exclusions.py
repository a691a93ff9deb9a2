"""A retry or a cooling channel among 10,000 costs what it costs among a few: the channels to
leave out are found from the breakers (the failing few), and a pick that leaves some out is
drawn from the whole level's kept weights and drawn again on an excluded channel, with the
chances a pick over the filtered list gives (or, where those chances would differ, the list
is filtered as before)."""

from __future__ import annotations

import collections
import random
from types import SimpleNamespace
from typing import Any, cast

import pytest

from faregate.exchange import routing
from faregate.exchange.breaker import CHANNEL, Breakers
from faregate.exchange.routing import DefaultSelector, pick_excluding, select_channel, weighted_pick
from faregate.state.snapshot import ChannelEntry


def channel(channel_id: int, weight: int = 0, keys: list[str] | None = None) -> ChannelEntry:
    return ChannelEntry(id=channel_id, type=1, name=f"c{channel_id}", keys=keys or ["k"], base_url="", status=1,
                        weight=weight, priority=0, models=["m"], groups=["default"], model_mapping={},
                        status_code_mapping={}, auto_ban=True, other="", setting={}, header_override={},
                        param_override={})


def shares(pick: Any, draws: int) -> dict[int, float]:
    counts = collections.Counter(pick().id for _ in range(draws))
    return {cid: n / draws for cid, n in counts.items()}


@pytest.mark.parametrize("weights", ["zero", "small", "large", "mixed"])
def test_redrawn_pick_has_the_filtered_pick_s_chances(weights: str) -> None:
    source = random.Random(weights)
    ranges: dict[str, tuple[int, ...]] = {"zero": (0,), "small": (0, 1, 2, 3), "large": tuple(range(10, 501)),
                                          "mixed": (1, 1, 2, 40, 60)}
    level = [channel(i, source.choice(ranges[weights])) for i in range(40)]
    excluded = {0, 3, 7, 11, 30}
    filtered = [c for c in level if c.id not in excluded]
    rng_a, rng_b = random.Random(1), random.Random(2)
    redrawn = shares(lambda: pick_excluding(level, excluded, rng_a), 40_000)
    expected = shares(lambda: weighted_pick(filtered, rng_b), 40_000)
    assert not set(redrawn) & excluded
    for cid in {c.id for c in filtered}:  # seeded: the same figures every run
        assert abs(redrawn.get(cid, 0.0) - expected.get(cid, 0.0)) < 0.012, cid


def test_where_the_chances_would_differ_the_list_is_filtered() -> None:
    # the whole level's average weight is under 10 (scaled by 100), the rest's is not
    level = [channel(i, 0) for i in range(36)] + [channel(100 + i, 50) for i in range(4)]
    assert pick_excluding(level, set(range(36)), random.Random(0)) is None
    # weights left only on excluded channels: the rest would be picked with equal chances
    level = [channel(i, 0) for i in range(39)] + [channel(99, 5)]
    assert pick_excluding(level, {99}, random.Random(0)) is None
    # most of the level left out: redraws would rarely land
    level = [channel(i, 5) for i in range(40)]
    assert pick_excluding(level, set(range(25)), random.Random(0)) is None
    assert pick_excluding(level, set(range(40)), random.Random(0)) is None
    assert pick_excluding(level, set(range(19)), random.Random(0)) is not None


def test_select_channel_never_gives_an_excluded_channel_and_skips_the_filtering() -> None:
    level = [channel(i, 1 + i % 7) for i in range(2_000)]
    excluded = set(range(0, 2_000, 3))

    class NoPass(list[ChannelEntry]):  # a pass over the whole level fails the test
        def __iter__(self) -> Any:
            raise AssertionError("the level was filtered")

    watched = NoPass(level)
    routing._weights_by_id.get(watched, None, lambda: routing._weights(level))  # kept as a request keeps it
    routing._cumulative.get(watched, None, lambda: routing.cumulative_weights(level))
    ctx = cast(Any, SimpleNamespace())
    for _ in range(500):
        chosen = select_channel([watched], 0, excluded, ctx, [], [DefaultSelector()])
        assert chosen is not None and chosen.id not in excluded


def test_another_selector_is_still_handed_the_filtered_list() -> None:
    level = [channel(i, 1) for i in range(100)]
    seen: list[list[int]] = []

    class Recording:
        def select(self, candidates: list[ChannelEntry], ctx: Any) -> ChannelEntry | None:
            seen.append([c.id for c in candidates])
            return None

    chosen = select_channel([level], 0, {5}, cast(Any, None), [], [Recording(), DefaultSelector()])
    assert chosen is not None and chosen.id != 5
    assert seen == [[i for i in range(100) if i != 5]]


def test_cooling_from_the_breakers_equals_the_pass_over_every_channel() -> None:
    rng = random.Random(7)
    for round_ in range(30):
        clock = [1000.0]
        breakers = Breakers(clock=lambda clock=clock: clock[0])  # type: ignore[misc]
        level = [channel(i, keys=["a", "b"] if i % 5 == 0 else ["k"]) for i in range(300)]
        for _ in range(rng.randint(0, 40)):
            c = rng.choice(level)
            key = CHANNEL if len(c.keys) == 1 or rng.random() < 0.5 else rng.choice(c.keys)
            breakers.trip(c.id, key, "test", base=rng.choice((0.0, 5.0, 50.0)), cap=300.0)
        breakers.trip(9_999, CHANNEL, "a channel of another model", base=30.0, cap=300.0)
        clock[0] += rng.choice((0.0, 10.0, 100.0))
        excluded = set(rng.sample(range(300), rng.randint(0, 5)))
        by_id = {c.id: c for c in level}
        assert breakers.cooling_of(by_id, excluded, clock[0]) == breakers.cooling(level, excluded, clock[0]), round_
