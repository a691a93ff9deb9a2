"""new-api's ``token_setting.max_user_tokens`` (issue 28 item 4): a user at the limit cannot
create another API key, refused with new-api's message; the limit is per user, and raising it
(or deleting a key) lets the next one through. Concurrent creates never pass the limit, on
SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayProcess, GatewayServer

KEY = {"name": "k", "remain_quota": 0, "unlimited_quota": True, "expired_time": -1}


async def test_a_key_beyond_the_limit_is_refused_with_new_apis_message(gateway: GatewayServer,
                                                                       admin: AdminClient) -> None:
    await admin.set_option("token_setting.max_user_tokens", 2)
    first = await admin.ok("POST", "/api/token/", json=KEY)
    await admin.ok("POST", "/api/token/", json=KEY)
    refused = await admin.call("POST", "/api/token/", json=KEY)
    assert refused == {"success": False, "message": "已达到最大令牌数量限制 (2)"}
    # another user has a limit of their own
    await admin.ok("POST", "/api/user/", json={"username": "bob", "password": "bob-password"})
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=30) as bob:
        body = (await bob.post("/api/user/login", json={"username": "bob", "password": "bob-password"})).json()
        bob.headers["New-Api-User"] = str(body["data"]["id"])
        assert (await bob.post("/api/token/", json=KEY)).json()["success"] is True
    # a key deleted makes room; a higher limit too
    await admin.ok("DELETE", f"/api/token/{first['id']}")
    await admin.ok("POST", "/api/token/", json=KEY)
    await admin.set_option("token_setting.max_user_tokens", 3)
    await admin.ok("POST", "/api/token/", json=KEY)
    assert (await admin.call("POST", "/api/token/", json=KEY))["message"] == "已达到最大令牌数量限制 (3)"


async def test_the_limit_is_checked_and_listed(admin: AdminClient) -> None:
    options = {o["key"]: o["value"] for o in await admin.ok("GET", "/api/option/")}
    assert options["token_setting.max_user_tokens"] == "1000"  # new-api's default
    for value in ("-1", "x", "1.5"):
        resp = await admin.call("PUT", "/api/option/", json={"key": "token_setting.max_user_tokens", "value": value})
        assert resp["success"] is False and "token_setting.max_user_tokens" in resp["message"]
    await admin.set_option("token_setting.max_user_tokens", 0)
    assert (await admin.call("POST", "/api/token/", json=KEY))["message"] == "已达到最大令牌数量限制 (0)"


@pytest.fixture(params=["sqlite", "mariadb", "postgres"])
def engine_url(request: pytest.FixtureRequest) -> str:
    """SQLite (a file), or a fresh MariaDB / PostgreSQL database (skipped without the server)."""
    if request.param == "sqlite":
        return ""
    return str(request.getfixturevalue(f"{request.param}_url"))


async def test_concurrent_creates_stop_exactly_at_the_limit_on_every_engine(engine_url: str,
                                                                           make_gateway: Any) -> None:
    """Twenty creates at once against a limit of five (on MariaDB and PostgreSQL each request on
    its own connection of the pool): exactly five keys, the other fifteen refused with the
    limit's message. The count and the insert share one transaction holding the user's row."""
    server = await make_gateway(db_url=engine_url)
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.set_option("token_setting.max_user_tokens", 5)
    answers = await asyncio.gather(*(admin.call("POST", "/api/token/", json={**KEY, "name": f"k{i}"})
                                     for i in range(20)))
    refused = [a["message"] for a in answers if not a["success"]]
    assert refused == ["已达到最大令牌数量限制 (5)"] * 15, answers
    assert await m.Token.filter(user_id=admin.user_id).count() == 5
    await admin.close()


async def test_concurrent_creates_across_two_sqlite_workers_stop_at_the_limit(tmp_path: Any) -> None:
    """The same race between the two worker processes of ``faregate serve --workers 2`` on one
    SQLite file: the first write of each create's transaction takes the database's write lock,
    so the other process waits for it rather than counting alongside (or failing as busy)."""
    proc = GatewayProcess(str(tmp_path / "gw"), workers=2)
    await asyncio.to_thread(proc.start)
    try:
        admin = AdminClient(proc.base_url)
        await admin.setup_root()
        await admin.set_option("token_setting.max_user_tokens", 5)
        answers = await asyncio.gather(*(admin.call("POST", "/api/token/", json={**KEY, "name": f"k{i}"})
                                         for i in range(20)))
        assert sorted(a["success"] for a in answers) == [False] * 15 + [True] * 5, answers
        assert {a["message"] for a in answers if not a["success"]} == {"已达到最大令牌数量限制 (5)"}
        assert (await admin.ok("GET", "/api/token/", params={"page_size": 100}))["total"] == 5
        await admin.close()
    finally:
        await asyncio.to_thread(proc.stop)
