"""Choosing among 10,000 channels costs about what choosing among a few does (issue 29, item 6):
a big routing level's running weights and a model's channels by type are found once per
level list, not per request, and choose exactly as before."""

from __future__ import annotations

import random
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, cast

import pytest

from faregate.errors import GatewayError
from faregate.exchange import attempts, routing
from faregate.exchange.routing import ListMemo, weighted_pick
from faregate.state.snapshot import ChannelEntry


def channel(channel_id: int, weight: int = 0, type: int = 1) -> ChannelEntry:
    return ChannelEntry(id=channel_id, type=type, name=f"c{channel_id}", keys=["k"], base_url="", status=1,
                        weight=weight, priority=0, models=["m"], groups=["default"], model_mapping={},
                        status_code_mapping={}, auto_ban=True, other="", setting={}, header_override={},
                        param_override={})


def per_request_pick(channels: Sequence[ChannelEntry], rng: random.Random) -> ChannelEntry:
    """The pick as it was computed on every request before the memo (new-api's weights)."""
    if len(channels) == 1:
        return channels[0]
    weights = [max(0, c.weight) for c in channels]
    total = sum(weights)
    if total == 0:
        return rng.choice(list(channels))
    if total / len(weights) < 10:
        weights = [w * 100 for w in weights]
    weights = [w + 10 for w in weights]
    return rng.choices(list(channels), weights=weights, k=1)[0]


@pytest.mark.parametrize("size", [1, 2, 5, 31, 32, 500])
@pytest.mark.parametrize("weights", ["zero", "small", "large", "mixed"])
def test_memoised_pick_chooses_as_before(size: int, weights: str) -> None:
    source = random.Random(size)
    draw = {"zero": lambda: 0, "small": lambda: source.randint(0, 3), "large": lambda: source.randint(10, 500),
            "mixed": lambda: source.choice((0, 0, 1, 50, -5))}[weights]
    level = [channel(i, draw()) for i in range(size)]
    for seed in range(40):  # the same random stream gives the same channel
        assert weighted_pick(level, random.Random(seed)).id == per_request_pick(level, random.Random(seed)).id


def test_big_level_weights_are_summed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = routing.cumulative_weights

    def counting(channels: Sequence[ChannelEntry]) -> list[int] | None:
        calls.append(len(channels))
        return real(channels)

    monkeypatch.setattr(routing, "cumulative_weights", counting)
    level = [channel(i, weight=i % 7) for i in range(1000)]
    for _ in range(50):
        weighted_pick(level)
    assert calls == [1000]
    # the routing index replaces a level when a channel in it changes: a new list, new weights
    changed = [channel(0, weight=10**9), *level[1:]]
    assert {weighted_pick(changed).id for _ in range(20)} == {0}
    assert calls == [1000, 1000]


def test_list_memo_keys_by_identity_and_is_bounded() -> None:
    memo = ListMemo[int](size=3)
    a, b = [1, 2], [1, 2]
    assert memo.get(a, None, lambda: 1) == 1
    assert memo.get(a, None, lambda: 2) == 1  # kept
    assert memo.get(b, None, lambda: 3) == 3  # an equal list is another list
    assert memo.get(a, "other key", lambda: 4) == 4
    assert memo.get([9], None, lambda: 5) == 5  # full: emptied, then this one kept
    assert memo.get(a, None, lambda: 6) == 6


class Provider:
    def __init__(self, name: str) -> None:
        self.name = name


class Op:
    endpoint = "chat"

    def __init__(self, serving: set[int]) -> None:
        self.serving = serving

    def serves(self, provider: Any, channel_type: int) -> bool:
        return channel_type in self.serving


def exchange(levels: list[list[ChannelEntry]], providers: dict[int, Any]) -> Any:
    snapshot = SimpleNamespace(levels=lambda group, model: levels)
    return SimpleNamespace(gateway=SimpleNamespace(snapshot=snapshot, providers=providers), model="m",
                           principal=SimpleNamespace(pinned_channel=None, group="default"))


@pytest.mark.parametrize("size", [3, 40, 400])
def test_unable_channels_by_type(size: int) -> None:
    levels = [[channel(i, type=1 + i % 3) for i in range(size)], [channel(size + 1, type=2)]]
    providers = {1: Provider("one"), 2: Provider("two")}  # no provider for type 3
    ex = exchange(levels, providers)
    for _ in range(2):  # the second time from the memo, alike
        unable = attempts.unable_channels(ex, cast(Any, Op({1})))
        assert unable == {c.id for level in levels for c in level if c.type != 1}
        unable.add(-1)  # the caller adds the channels it tried: the memo's set must not change
    assert attempts.unable_channels(ex, cast(Any, Op({1, 2}))) == {c.id for level in levels for c in level
                                                                   if c.type == 3}
    with pytest.raises(GatewayError):
        attempts.unable_channels(ex, cast(Any, Op(set())))
