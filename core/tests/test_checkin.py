"""new-api's daily check-in (issue 28, item 8): ``/api/user/checkin`` is the user's own route (it
was caught by the admin's ``/api/user/{id}``), answers new-api's shapes, and credits a random quota
within ``checkin_setting.min_quota`` … ``max_quota`` once a day per user, however many check-ins
arrive at once, on one worker or two."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Any

import httpx

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayProcess, GatewayServer


async def _user(gateway: GatewayServer, admin: AdminClient, name: str = "cora") -> AdminClient:
    await admin.ok("POST", "/api/user/", json={"username": name, "password": ROOT_PASSWORD})
    client = AdminClient(gateway.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login", json={"username": name,
                                                                       "password": ROOT_PASSWORD}))["id"]
    return client


async def test_check_in_once_a_day(gateway: GatewayServer, admin: AdminClient) -> None:
    cora = await _user(gateway, admin)
    # off by default, as new-api: said so, not the admin route's refusal
    off = await cora.call("GET", "/api/user/checkin")
    assert off == {"success": False, "message": "check-in is not enabled"}
    assert (await cora.call("POST", "/api/user/checkin"))["message"] == "check-in is not enabled"
    assert (await cora.ok("GET", "/api/status"))["checkin_enabled"] is False
    await admin.set_option("checkin_setting.enabled", "true")
    await admin.set_option("checkin_setting.min_quota", "5000")
    await admin.set_option("checkin_setting.max_quota", "5000")
    assert (await cora.ok("GET", "/api/status"))["checkin_enabled"] is True
    before = (await m.User.get(id=cora.user_id)).quota
    status = await cora.ok("GET", "/api/user/checkin")
    assert status == {"enabled": True, "min_quota": 5000, "max_quota": 5000, "stats": {
        "total_quota": 0, "total_checkins": 0, "checkin_count": 0, "checked_in_today": False, "records": []}}
    done = await cora.ok("POST", "/api/user/checkin")
    today = time.strftime("%Y-%m-%d")
    assert done == {"quota_awarded": 5000, "checkin_date": today}
    assert (await m.User.get(id=cora.user_id)).quota == before + 5000
    again = await cora.call("POST", "/api/user/checkin")
    assert again == {"success": False, "message": "already checked in today"}
    assert (await m.User.get(id=cora.user_id)).quota == before + 5000
    stats = (await cora.ok("GET", "/api/user/checkin", params={"month": today[:7]}))["stats"]
    assert stats == {"total_quota": 5000, "total_checkins": 1, "checkin_count": 1, "checked_in_today": True,
                     "records": [{"checkin_date": today, "quota_awarded": 5000}]}
    assert (await cora.ok("GET", "/api/user/checkin", params={"month": "2001-01"}))["stats"]["checkin_count"] == 0
    logs = await m.Log.filter(user_id=cora.user_id, type=m.LOG_SYSTEM)
    assert len(logs) == 1 and logs[0].quota == 5000 and "check-in" in logs[0].content
    bad = await cora.http.get("/api/user/checkin", params={"month": "2026-13"},
                              headers={"New-Api-User": str(cora.user_id)})
    assert bad.status_code == 400 and "month" in bad.json()["message"]
    async with httpx.AsyncClient(base_url=gateway.base_url) as anonymous:
        assert (await anonymous.post("/api/user/checkin")).json()["success"] is False
    await cora.close()


async def test_the_gift_is_drawn_within_the_range(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.set_option("checkin_setting.enabled", "true")
    await admin.set_option("checkin_setting.min_quota", "1000")
    await admin.set_option("checkin_setting.max_quota", "1010")
    gifts = []
    for n in range(4):
        user = await _user(gateway, admin, f"u{n}")
        gifts.append((await user.ok("POST", "/api/user/checkin"))["quota_awarded"])
        await user.close()
    assert all(1000 <= gift <= 1010 for gift in gifts)
    await admin.set_option("checkin_setting.max_quota", "10")  # below the least: the least, as new-api
    late = await _user(gateway, admin, "late")
    assert (await late.ok("POST", "/api/user/checkin"))["quota_awarded"] == 1000
    await late.close()


async def test_check_ins_at_once_credit_once(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.set_option("checkin_setting.enabled", "true")
    cora = await _user(gateway, admin)
    before = (await m.User.get(id=cora.user_id)).quota
    answers = await asyncio.gather(*(cora.call("POST", "/api/user/checkin") for _ in range(12)))
    won = [a for a in answers if a["success"]]
    assert len(won) == 1 and all(a["message"] == "already checked in today" for a in answers if not a["success"])
    assert (await m.User.get(id=cora.user_id)).quota == before + won[0]["data"]["quota_awarded"]
    assert await m.Checkin.filter(user_id=cora.user_id).count() == 1
    await cora.close()


def _check_in_on_two_workers(base_url: str) -> tuple[list[dict[str, Any]], int]:
    with httpx.Client(base_url=base_url, timeout=60) as root:
        root.post("/api/setup", json={"username": "root", "password": ROOT_PASSWORD, "confirmPassword": ROOT_PASSWORD})
        login = root.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD}).json()
        root.headers["New-Api-User"] = str(login["data"]["id"])
        root.put("/api/option/", json={"key": "checkin_setting.enabled", "value": "true"})
        root.post("/api/user/", json={"username": "cora", "password": ROOT_PASSWORD})
    # a connection each (spread over both workers), all logged in as the one user
    clients = [httpx.Client(base_url=base_url, timeout=60) for _ in range(16)]
    try:
        for client in clients:
            user = client.post("/api/user/login", json={"username": "cora", "password": ROOT_PASSWORD}).json()
            client.headers["New-Api-User"] = str(user["data"]["id"])
        with concurrent.futures.ThreadPoolExecutor(len(clients)) as pool:
            answers = list(pool.map(lambda c: c.post("/api/user/checkin").json(), clients))
        return answers, int(clients[0].get("/api/user/self").json()["data"]["quota"])
    finally:
        for client in clients:
            client.close()


async def test_check_ins_on_two_workers_credit_once(tmp_path: Any) -> None:
    proc = GatewayProcess(str(tmp_path / "gw"), workers=2)
    await asyncio.to_thread(proc.start)
    try:
        answers, quota = await asyncio.to_thread(_check_in_on_two_workers, proc.base_url)
    finally:
        await asyncio.to_thread(proc.stop)
    won = [a for a in answers if a["success"]]
    assert len(won) == 1, answers
    assert quota == won[0]["data"]["quota_awarded"]  # a new user starts at 0 (QuotaForNewUser)
