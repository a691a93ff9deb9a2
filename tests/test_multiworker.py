"""A change made through the management API takes effect at once in every worker
process: ``faregate serve --workers 2`` on SQLite, requests spread over both workers
right after each change (the relay checks the shared epoch per request)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest_asyncio

from faregate.testing.harness import AdminClient, GatewayProcess

MODEL = "gpt-4o-mini"
UPSTREAM_KEY = "upstream-secret-0123456789abcdef"  # no sk- prefix: the log redaction patterns miss it
BURST = 20


@pytest_asyncio.fixture
async def process(tmp_path: Any) -> AsyncIterator[GatewayProcess]:
    proc = GatewayProcess(str(tmp_path / "gw"), workers=2)
    await asyncio.to_thread(proc.start)
    try:
        yield proc
    finally:
        await asyncio.to_thread(proc.stop)


def lease_workers(data_dir: str, token_id: int) -> set[str]:
    """Workers holding a quota lease on the token, i.e. that served it lately."""
    with sqlite3.connect(f"file:{os.path.join(data_dir, 'faregate.db')}?mode=ro", uri=True, timeout=10) as db:
        rows = db.execute("SELECT DISTINCT worker FROM quota_leases WHERE kind = 'token' AND ref_id = ?",
                          (token_id,)).fetchall()
    return {r[0] for r in rows}


class Burst:
    """BURST clients made ahead of time (making one takes milliseconds, which would
    spread a burst out), each with its own keep-alive connection, so that every burst
    goes out over the same connections, spread over the workers."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        # the SDK's own HTTP clients, kept so management calls can go over the same connections
        self.http = [openai.DefaultAsyncHttpxClient(timeout=30) for _ in range(BURST)]
        self.clients = [openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0,
                                           http_client=http) for http in self.http]

    async def manage(self, path: str, headers: dict[str, str]) -> list[dict[str, Any]]:
        """The same management call on every connection at once."""
        responses = await asyncio.gather(*(h.get(self.base_url + path, headers=headers) for h in self.http))
        for http in self.http:
            http.cookies.clear()  # a refreshed session cookie would outrank the next call's credentials
        return [{"status": r.status_code, **r.json()} for r in responses]

    async def fire(self, key: str) -> list[Any]:
        async def one(client: openai.AsyncOpenAI) -> Any:
            try:
                return await client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "hi"}],
                    extra_headers={"Authorization": f"Bearer {key}"})
            except openai.APIStatusError as exc:
                return exc

        return await asyncio.gather(*(one(c) for c in self.clients))

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


def statuses(results: list[Any]) -> list[int]:
    return [getattr(r, "status_code", 200) for r in results]


async def new_key(admin: AdminClient, name: str) -> tuple[int, str]:
    token = await admin.ok("POST", "/api/token/", json={"name": name, "remain_quota": 50_000_000,
                                                         "expired_time": -1})
    return token["id"], "sk-" + (await admin.ok("POST", f"/api/token/{token['id']}/key"))["key"]


async def spread_connections(admin: AdminClient, process: GatewayProcess) -> Burst:
    """Connections on both workers: which worker served a burst shows in the quota
    leases of a key used by that burst only; the kernel usually spreads the first."""
    for attempt in range(8):
        burst = Burst(process.base_url)
        token_id, key = await new_key(admin, f"warm-{attempt}")
        results = await burst.fire(key)
        assert statuses(results) == [200] * BURST, [getattr(r, "message", "") for r in results]
        if len(lease_workers(process.env["FAREGATE_DATA_DIR"], token_id)) == 2:
            return burst
        await burst.close()
    raise AssertionError("could not get connections to both workers")


async def test_changes_reach_every_worker_at_once(fake_openai: Any, process: GatewayProcess) -> None:
    admin = AdminClient(process.base_url)
    burst: Burst | None = None
    try:
        await admin.setup_root()
        warm_channel = await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
        burst = await spread_connections(admin, process)
        await admin.ok("DELETE", f"/api/channel/{warm_channel}")

        # a new user's session works at once on every worker
        await admin.ok("POST", "/api/user/", json={"username": "carol", "password": "carol-pass"})
        login = await admin.http.post("/api/user/login", json={"username": "carol", "password": "carol-pass"})
        carol = {"Cookie": f"session={login.cookies['session']}", "New-Api-User": str(login.json()["data"]["id"])}
        answers = await burst.manage("/api/user/self", carol)
        assert all(a["status"] == 200 and a["success"] and a["data"]["username"] == "carol" for a in answers), answers
        await admin.setup_root()  # back to root's session

        # an access token works at once on every worker; a new one replaces it everywhere
        uid = str(admin.user_id)
        first = await admin.ok("GET", "/api/user/token")
        answers = await burst.manage("/api/user/self", {"Authorization": first, "New-Api-User": uid})
        assert all(a["success"] and a["data"]["username"] == "root" for a in answers), answers
        await admin.ok("GET", "/api/user/token")
        answers = await burst.manage("/api/user/self", {"Authorization": first, "New-Api-User": uid})
        assert all(a["status"] == 200 and not a["success"] for a in answers), answers

        # a new key and channel: at once, both workers route with them
        token_id, key = await new_key(admin, "mw")
        channel_id = await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, key=UPSTREAM_KEY)
        results = await burst.fire(key)
        assert statuses(results) == [200] * BURST, [getattr(r, "message", "") for r in results]
        assert all("hi" in r.choices[0].message.content for r in results)

        # disable the key: at once, every worker refuses it
        await admin.ok("PUT", "/api/token/?status_only=true", json={"id": token_id, "status": 2})
        assert statuses(await burst.fire(key)) == [401] * BURST

        # re-enable it, then delete the channel: at once, no route for the model
        await admin.ok("PUT", "/api/token/?status_only=true", json={"id": token_id, "status": 1})
        await admin.ok("DELETE", f"/api/channel/{channel_id}")
        results = await burst.fire(key)
        assert statuses(results) == [404] * BURST
        assert all("model_not_found" in r.response.text for r in results)
        logs = process.logs()
        assert "Faregate listening on" in logs and UPSTREAM_KEY not in logs and key[3:] not in logs
    finally:
        await admin.close()
        if burst is not None:
            await burst.close()
