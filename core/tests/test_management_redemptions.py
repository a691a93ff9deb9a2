"""Redemption codes (issue 10): batch creation, list / search / get / update / delete,
delete invalid; redeeming is race-free (one code, 50 concurrent redeemers: credited once),
also on MariaDB and PostgreSQL, where the racing requests run on separate connections of
the pool at once (issue 17), and a used code replayed by its redeemer credits nothing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from faregate.billing.pricing import MAX_QUOTA
from faregate.db import models as m
from faregate.management.redemptions import RedeemRefused, redeem_code
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer


async def test_crud(gateway: GatewayServer, admin: AdminClient) -> None:
    keys = await admin.ok("POST", "/api/redemption/", json={"name": "promo_1", "count": 3, "quota": 1000})
    assert len(keys) == 3 and len(set(keys)) == 3
    listed = await admin.ok("GET", "/api/redemption/", params={"page_size": 2})
    assert (listed["total"], len(listed["items"])) == (3, 2)
    assert (await admin.ok("GET", "/api/redemption/search", params={"keyword": "o_"}))["total"] == 3
    assert (await admin.ok("GET", "/api/redemption/search", params={"keyword": "%"}))["total"] == 0
    first = listed["items"][0]
    assert (await admin.ok("GET", f"/api/redemption/{first['id']}"))["key"] == first["key"]
    updated = await admin.ok("PUT", "/api/redemption/", json={"id": first["id"], "quota": 5, "name": "x"})
    assert (updated["quota"], updated["name"]) == (5, "x")
    await admin.ok("PUT", "/api/redemption/?status_only=1", json={"id": first["id"], "status": 2})
    await m.Redemption.filter(id=listed["items"][1]["id"]).update(expired_time=int(time.time()) - 10)
    assert await admin.ok("DELETE", "/api/redemption/invalid") == 2
    assert await m.Redemption.all().count() == 1
    for bad in ({"name": "", "quota": 1}, {"name": "n", "quota": 0}, {"name": "n", "quota": 1, "count": 101},
                {"name": "n", "quota": 1, "expired_time": 5}):
        assert (await admin.call("POST", "/api/redemption/", json=bad))["success"] is False


async def test_one_code_fifty_redeemers_credited_once(gateway: GatewayServer, admin: AdminClient) -> None:
    (key,) = await admin.ok("POST", "/api/redemption/", json={"name": "race", "quota": 777})
    clients = []
    for i in range(5):
        await admin.ok("POST", "/api/user/", json={"username": f"racer{i}", "password": ROOT_PASSWORD})
        client = AdminClient(gateway.base_url)
        client.user_id = (await client.ok("POST", "/api/user/login",
                                          json={"username": f"racer{i}", "password": ROOT_PASSWORD}))["id"]
        clients.append(client)
    answers = await asyncio.gather(*(clients[i % 5].call("POST", "/api/user/topup", json={"key": key})
                                     for i in range(50)))
    assert sum(1 for a in answers if a["success"]) == 1
    assert sum(a["data"] for a in answers if a["success"]) == 777
    users = await m.User.filter(username__startswith="racer")
    assert sum(u.quota for u in users) == 777
    assert await m.Log.filter(type=m.LOG_TOPUP).count() == 1
    row = await m.Redemption.get(key=key)
    assert row.status == m.REDEMPTION_USED and row.used_user_id in {u.id for u in users}
    again = await admin.call("PUT", "/api/redemption/", json={"id": row.id, "status": 1})
    assert again["success"] is False  # a used code stays used
    for client in clients:
        await client.close()


async def test_a_full_wallet_or_a_deleted_user_leaves_the_code_unused(gateway: GatewayServer,
                                                                       admin: AdminClient) -> None:
    """The wallet ceiling a top-up keeps (``MAX_QUOTA``) holds for a code too, and a user
    deleted while still signed in does not burn a code for nothing: refused, the code stays
    enabled and unredeemed, nothing credited or logged."""
    (key,) = await admin.ok("POST", "/api/redemption/", json={"name": "ceiling", "quota": 10})
    root = await m.User.get(username="root")
    await m.User.filter(id=root.id).update(quota=MAX_QUOTA - 9)
    full = await admin.call("POST", "/api/user/topup", json={"key": key})
    assert full["success"] is False and "cannot hold" in full["message"]
    with pytest.raises(RedeemRefused, match="no longer exists"):
        await redeem_code(987_654, "ghost", key)
    row = await m.Redemption.get(key=key)
    assert (row.status, row.used_user_id, row.redeemed_time) == (m.REDEMPTION_ENABLED, 0, 0)
    assert (await m.User.get(id=root.id)).quota == MAX_QUOTA - 9
    assert not await m.Log.filter(type=m.LOG_TOPUP).exists()
    # exactly at the ceiling is still allowed, and the code is then used
    await m.User.filter(id=root.id).update(quota=MAX_QUOTA - 10)
    assert await admin.ok("POST", "/api/user/topup", json={"key": key}) == 10
    assert (await m.User.get(id=root.id)).quota == MAX_QUOTA
    assert (await m.Redemption.get(key=key)).status == m.REDEMPTION_USED


@pytest.fixture(params=["sqlite", "mariadb", "postgres"])
def engine_url(request: pytest.FixtureRequest) -> str:
    """The database of a race: SQLite (a file), or a fresh MariaDB / PostgreSQL database
    (skipped when the server is not there)."""
    if request.param == "sqlite":
        return ""
    return str(request.getfixturevalue(f"{request.param}_url"))


async def test_racing_redeemers_credit_once_on_every_engine(engine_url: str, make_gateway: Any) -> None:
    """Several codes, each raced for by 24 concurrent requests of six users (on MariaDB and
    PostgreSQL each on its own connection of the pool): every code credits exactly once, its
    quota to exactly the user its row names, with one top-up log row; replaying a used code
    credits nothing."""
    server = await make_gateway(db_url=engine_url)
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    codes = {quota: (await admin.ok("POST", "/api/redemption/", json={"name": f"race{quota}", "quota": quota}))[0]
             for quota in (1_000, 20_000, 300_000)}
    clients = []
    for i in range(6):
        await admin.ok("POST", "/api/user/", json={"username": f"runner{i}", "password": ROOT_PASSWORD})
        client = AdminClient(server.base_url)
        client.user_id = (await client.ok("POST", "/api/user/login",
                                          json={"username": f"runner{i}", "password": ROOT_PASSWORD}))["id"]
        clients.append(client)
    attempts = [(clients[i % 6], key) for key in codes.values() for i in range(24)]
    answers = await asyncio.gather(*(client.call("POST", "/api/user/topup", json={"key": key})
                                     for client, key in attempts))
    won = [a["data"] for a in answers if a["success"]]
    assert sorted(won) == sorted(codes)  # each code once, for its own quota
    users = {u.id: u for u in await m.User.filter(username__startswith="runner")}
    credited: dict[int, int] = {}
    for row in await m.Redemption.filter(key__in=list(codes.values())):
        assert row.status == m.REDEMPTION_USED and row.used_user_id in users
        credited[row.used_user_id] = credited.get(row.used_user_id, 0) + row.quota
    assert {uid: u.quota for uid, u in users.items() if u.quota} == credited
    assert await m.Log.filter(type=m.LOG_TOPUP).count() == len(codes)
    # the winner replays its code: refused, nothing credited
    winner = next(c for c in clients if c.user_id == next(iter(credited)))
    replay = await winner.call("POST", "/api/user/topup", json={"key": codes[1_000]})
    assert replay["success"] is False
    assert sum(u.quota for u in await m.User.filter(username__startswith="runner")) == sum(codes)
    for client in (admin, *clients):
        await client.close()
