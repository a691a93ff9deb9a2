"""Redemption codes (issue 10): batch creation, list / search / get / update / delete,
delete invalid; redeeming is race-free (one code, 50 concurrent redeemers: credited once)."""

from __future__ import annotations

import asyncio
import time

from faregate.db import models as m
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
