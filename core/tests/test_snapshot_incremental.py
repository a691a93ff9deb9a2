"""A change to one channel or key updates the snapshot incrementally (issue 29, item 6): the
routes it was not in keep their objects, only its pairs are recomputed, and the result is
what a whole reload from the database builds."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from faregate.db import models as m
from faregate.db.storage import close_storage, migrate, open_storage, tortoise_config
from faregate.default_plugins.options import CORE_REGISTRY, GatewayOptions
from faregate.security.crypto import SecretBox
from faregate.state.snapshot import Snapshot
from faregate.testing import seeded_sqlite
from faregate.testing.conformance import installed_storage_backends

GROUPS = ("default", "vip", "svip")
MODELS = ("gpt-4o", "gpt-4o-mini", "claude", "gemini", "o3")
BOX = SecretBox("snapshot-incremental")


@pytest_asyncio.fixture
async def storage(tmp_path: Path) -> AsyncIterator[None]:
    config = tortoise_config("sqlite://" + str(tmp_path / "snap.db"), installed_storage_backends())[1]
    await seeded_sqlite.seed(config)
    await migrate(config)
    await open_storage(config)
    try:
        yield
    finally:
        await close_storage()


def new_snapshot() -> Snapshot[Any]:
    return Snapshot(BOX, CORE_REGISTRY, GatewayOptions)


async def loaded() -> Snapshot[Any]:
    snap = new_snapshot()
    await snap.load_all()
    return snap


def shape(snap: Snapshot[Any]) -> dict[str, dict[str, list[list[int]]]]:
    return {group: {model: [[c.id for c in level] for level in levels] for model, levels in by_model.items()}
            for group, by_model in snap.routes.items()}


async def add_channel(name: str, pairs: list[tuple[str, str]], priority: int = 0,
                      status: int = m.CHANNEL_ENABLED, enabled: bool = True) -> m.Channel:
    row = await m.Channel.create(name=name, models=",".join(sorted({p[1] for p in pairs})),
                                 group=",".join(sorted({p[0] for p in pairs})), priority=priority, status=status)
    await set_abilities(row.id, pairs, enabled)
    return row


async def set_abilities(channel_id: int, pairs: list[tuple[str, str]], enabled: bool = True) -> None:
    await m.Ability.filter(channel_id=channel_id).delete()
    await m.Ability.bulk_create([m.Ability(group=g, model=mo, channel_id=channel_id, enabled=enabled)
                                 for g, mo in sorted(set(pairs))])


async def assert_same_as_full_reload(snap: Snapshot[Any]) -> None:
    full = await loaded()
    assert shape(snap) == shape(full)
    assert snap.channels == full.channels
    # the routes hold the snapshot's current entries, not stale copies
    for by_model in snap.routes.values():
        for levels in by_model.values():
            assert all(c is snap.channels[c.id] for level in levels for c in level)


async def test_one_channel_change_recomputes_only_its_routes(storage: None) -> None:
    a = await add_channel("a", [("default", "gpt-4o"), ("vip", "gpt-4o")])
    b = await add_channel("b", [("default", "claude")])
    c = await add_channel("c", [("default", "gemini"), ("default", "gpt-4o")], priority=5)
    snap = await loaded()
    claude, gemini = snap.routes["default"]["claude"], snap.routes["default"]["gemini"]
    entry_b, entry_c = snap.channels[b.id], snap.channels[c.id]
    default_4o = snap.routes["default"]["gpt-4o"]
    before = snap.route_index.recomputed

    # channel a moves from gpt-4o to o3 in the default group only
    await m.Channel.filter(id=a.id).update(models="o3", group="default")
    await set_abilities(a.id, [("default", "o3")])
    await snap.load_channel(a.id)

    # its three pairs (two left, one joined) are recomputed; nothing else is
    assert snap.route_index.recomputed - before == 3
    assert snap.routes["default"]["claude"] is claude and snap.routes["default"]["gemini"] is gemini
    assert snap.channels[b.id] is entry_b and snap.channels[c.id] is entry_c
    assert snap.routes["default"]["gpt-4o"] is not default_4o  # replaced, not edited in place
    assert [[ch.id for ch in level] for level in default_4o] == [[c.id], [a.id]]  # a reader's old list holds
    assert "vip" not in snap.routes
    await assert_same_as_full_reload(snap)


async def test_dropped_channel_leaves_its_routes_at_once(storage: None) -> None:
    a = await add_channel("a", [("default", "gpt-4o"), ("default", "o3")])
    b = await add_channel("b", [("default", "gpt-4o")])
    other = await add_channel("other", [("vip", "claude")])
    snap = await loaded()
    claude = snap.routes["vip"]["claude"]
    before = snap.route_index.recomputed
    changes = snap.routes_changes
    snap.drop_channel(a.id)
    assert snap.route_index.recomputed - before == 2
    assert snap.routes_changes > changes  # what the metrics' cache of known models checks
    assert shape(snap) == {"default": {"gpt-4o": [[b.id]]}, "vip": {"claude": [[other.id]]}}
    assert snap.routes["vip"]["claude"] is claude


async def test_changed_key_replaces_only_its_entry(storage: None) -> None:
    user = await m.User.create(username="u", group="default")
    tokens = [await m.Token.create(user_id=user.id, key_hash=f"hash-{i}", key_enc="", key_mask="sk-…",
                                  name=f"t{i}") for i in range(5)]
    await m.Token.filter(id=tokens[1].id).update(allow_ips="10.0.0.0/8", model_limits_enabled=True,
                                                 model_limits="a,b", unlimited_quota=True, group="vip")
    snap = await loaded()
    # a whole load reads plain columns, a change a model instance: the same entry either way
    await snap.load_token(tokens[1].id)
    assert snap.tokens_by_id[tokens[1].id] == (await loaded()).tokens_by_id[tokens[1].id]
    by_hash, entries = snap.tokens_by_hash, dict(snap.tokens_by_hash)
    await m.Token.filter(id=tokens[2].id).update(key_hash="hash-new", name="renamed")
    await snap.load_token(tokens[2].id)
    assert snap.tokens_by_hash is by_hash  # the dict is kept, not rebuilt
    assert "hash-2" not in by_hash and by_hash["hash-new"].name == "renamed"
    assert all(by_hash[h] is entries[h] for h in entries if h != "hash-2")
    await m.Token.filter(id=tokens[0].id).delete()
    await snap.load_token(tokens[0].id)
    assert "hash-0" not in by_hash and tokens[0].id not in snap.tokens_by_id
    full = await loaded()
    assert snap.tokens_by_hash == full.tokens_by_hash and snap.tokens_by_id == full.tokens_by_id


async def random_change(rng: random.Random, ids: list[int]) -> int:
    """One random write to the channels or abilities, as management or health would make it;
    the id of the channel it changed."""
    pairs = [(g, mo) for g in GROUPS for mo in MODELS]
    action = rng.choice(("create", "edit", "abilities", "status", "priority", "delete"))
    if action == "create" or not ids:
        row = await add_channel(f"c{len(ids)}", rng.sample(pairs, rng.randint(1, 4)), priority=rng.choice((0, 0, 5)),
                                status=rng.choice((m.CHANNEL_ENABLED, m.CHANNEL_ENABLED, m.CHANNEL_MANUALLY_DISABLED)))
        ids.append(row.id)
        return row.id
    channel_id = rng.choice(ids)
    if action == "edit":
        await set_abilities(channel_id, rng.sample(pairs, rng.randint(0, 4)))
        await m.Channel.filter(id=channel_id).update(name=f"edited-{rng.random()}")
    elif action == "abilities":
        await m.Ability.filter(channel_id=channel_id).update(enabled=rng.random() < 0.5)
    elif action == "status":
        await m.Channel.filter(id=channel_id).update(
            status=rng.choice((m.CHANNEL_ENABLED, m.CHANNEL_MANUALLY_DISABLED, m.CHANNEL_AUTO_DISABLED)))
    elif action == "priority":
        await m.Channel.filter(id=channel_id).update(priority=rng.choice((0, 1, 5, -1)))
    else:
        await m.Channel.filter(id=channel_id).delete()
        if rng.random() < 0.7:  # sometimes its abilities are left behind (an orphan: never routed)
            await m.Ability.filter(channel_id=channel_id).delete()
    return channel_id


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_random_changes_match_a_full_reload(storage: None, seed: int) -> None:
    rng = random.Random(seed)
    ids: list[int] = []
    for _ in range(6):
        await random_change(rng, ids)
    snap = await loaded()
    for _ in range(25):
        if rng.random() < 0.2:  # the health checker's path: out of routing now, the database after
            channel_id = rng.choice(ids)
            snap.drop_channel(channel_id)
            await m.Channel.filter(id=channel_id).update(status=m.CHANNEL_AUTO_DISABLED)
            await assert_same_as_full_reload(snap)
            await snap.load_channel(channel_id)
        else:  # one change, or several applied together as one pull of the change feed does
            changed = [await random_change(rng, ids) for _ in range(rng.choice((1, 1, 3)))]
            await snap.load_channels(changed)
        await assert_same_as_full_reload(snap)
