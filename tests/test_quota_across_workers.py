"""A request the key and the wallet can pay is never refused because another worker or node
holds the balance's quota in a lease (issue 26, item 3).

A small fresh key ($0.10, 50,000 quota) used back to back, each call on the other worker of a
``--workers 2`` gateway (SQLite), or on the other of two nodes sharing MariaDB and Redis: every
call is answered 200. Before, the first worker leased the whole balance (a 50,000 chunk) and
kept it until 5 s idle, so every call on the other worker got 403 "quota is not enough". The
same with reservations worth 60 % of the balance (whatever the reservation size, two workers
cannot both hold one: the second must get the first's back), and with a small wallet behind an
unlimited key. And requests in flight at once on both sides, which together fit the balance,
are all served."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from faregate.testing.harness import AdminClient, GatewayProcess
from faregate_adapter_openai.testing import FakeOpenAI

MODEL = "lease-model"
BALANCE = 50_000  # $0.10
CALLS = 10
# a reservation is the prompt (a dozen tokens) plus max_tokens at ratios 1: a small one, and
# one worth 60 % of the balance (each call costs ~25)
RESERVATIONS = {"small": 1_000, "large": 30_000}
# in flight at once: this many per side, each reserving a share that together fit the balance
IN_FLIGHT = 4
IN_FLIGHT_TOKENS = BALANCE * 96 // 100 // (2 * IN_FLIGHT) - 20
#: how long finding IN_FLIGHT connections to each worker may take (a few seconds when quiet)
PROBE_DEADLINE = 180.0


class GatedOpenAI(FakeOpenAI):
    """Answers once :attr:`gate` is open (it is, unless a test closes it), counting the
    requests that reached it."""

    def __init__(self) -> None:
        super().__init__(models=[MODEL])
        self.gate = asyncio.Event()
        self.gate.set()
        self.reached = 0

    async def answer(self, request: Any, response: Any) -> None:
        self.reached += 1
        await self.gate.wait()
        await super().answer(request, response)


@pytest_asyncio.fixture
async def upstream() -> AsyncIterator[GatedOpenAI]:
    async with GatedOpenAI() as fake:
        yield fake


async def prepare(admin: AdminClient, upstream: FakeOpenAI) -> None:
    await admin.setup_root()
    await admin.add_channel(base_url=upstream.base_url, models=MODEL)
    await admin.set_option("ModelRatio", {MODEL: 1})
    await admin.set_option("CompletionRatio", {MODEL: 1})


async def small_balances(admin: AdminClient, name: str) -> dict[str, str]:
    """Keys worth BALANCE: one limited key (of root), and one unlimited key of a new user
    whose wallet holds BALANCE."""
    limited = await admin.add_token(remain_quota=BALANCE, name=f"{name}-key")
    password = "wallet-pass-1234"
    await admin.ok("POST", "/api/user/", json={"username": name, "password": password})
    users = await admin.ok("GET", f"/api/user/search?keyword={name}")
    user_id = next(u["id"] for u in users["items"] if u["username"] == name)
    await admin.ok("PUT", "/api/user/", json={"id": user_id, "quota": BALANCE})
    owner = AdminClient(admin.base_url)
    try:
        await owner.setup_root(name, password)
        wallet = await owner.add_token(unlimited=True, name=f"{name}-wallet")
    finally:
        await owner.close()
    return {"key": limited, "wallet": wallet}


async def call(http: httpx.AsyncClient, key: str, max_tokens: int) -> httpx.Response:
    return await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                           json={"model": MODEL, "max_tokens": max_tokens,
                                 "messages": [{"role": "user", "content": "hi"}]})


async def back_to_back(sides: list[httpx.AsyncClient], key: str, max_tokens: int) -> list[str]:
    """CALLS calls one after the other, alternating between the sides; what each answered."""
    answers = []
    for i in range(CALLS):
        resp = await call(sides[i % len(sides)], key, max_tokens)
        answers.append(f"{resp.status_code} {resp.text[:120] if resp.status_code != 200 else ''}".strip())
    return answers


async def known_everywhere(sides: list[httpx.AsyncClient], key: str) -> None:
    """Each side knows the new key and its owner (another node learns them through Redis)."""
    for http in sides:
        for _ in range(600):
            if (await http.get("/v1/models", headers={"Authorization": f"Bearer {key}"})).status_code == 200:
                break
            await asyncio.sleep(0.05)


async def in_flight_at_once(upstream: GatedOpenAI, sides: list[list[httpx.AsyncClient]], key: str) -> list[int]:
    """IN_FLIGHT requests per side at once, the upstream holding its answers until all of
    them reached it (or one was answered without it): the reservations are all open together."""
    upstream.gate.clear()
    upstream.reached = 0
    calls = [asyncio.create_task(call(http, key, IN_FLIGHT_TOKENS)) for side in sides for http in side]
    for _ in range(6000):
        if upstream.reached == len(calls) or any(c.done() for c in calls):
            break
        await asyncio.sleep(0.01)
    upstream.gate.set()
    return [resp.status_code for resp in await asyncio.gather(*calls)]


async def assert_all_served(admin: AdminClient, upstream: GatedOpenAI, sides: list[list[httpx.AsyncClient]],
                            name: str) -> None:
    """The back-to-back calls over the first connection of each side, then requests in flight
    at once on every connection."""
    firsts = [side[0] for side in sides]
    for size, max_tokens in RESERVATIONS.items():
        keys = await small_balances(admin, f"{name}{size}")
        for limit, key in keys.items():
            await known_everywhere(firsts, key)
            answers = await back_to_back(firsts, key, max_tokens)
            assert answers == ["200"] * CALLS, (size, limit, answers)
    for limit, key in (await small_balances(admin, f"{name}burst")).items():
        await known_everywhere(firsts, key)
        assert await in_flight_at_once(upstream, sides, key) == [200] * IN_FLIGHT * len(sides), limit


# ---- two workers of one node -------------------------------------------------------------


def lease_worker(data_dir: str, token_id: int) -> str | None:
    with sqlite3.connect(f"file:{os.path.join(data_dir, 'faregate.db')}?mode=ro", uri=True, timeout=10) as db:
        row = db.execute("SELECT worker FROM quota_leases WHERE kind = 'token' AND ref_id = ?",
                         (token_id,)).fetchone()
    return None if row is None else str(row[0])


async def connections_per_worker(admin: AdminClient, process: GatewayProcess) -> list[list[httpx.AsyncClient]]:
    """IN_FLIGHT keep-alive connections to each worker: each candidate connection serves one
    call with a key of its own, and the worker holding that key's lease is the connection's.
    The kernel decides which worker accepts a connection: while other processes load the
    machine, one worker may take dozens in a row, so this probes until both workers have
    IN_FLIGHT (or PROBE_DEADLINE passes), not a fixed number of times."""
    found: dict[str, list[httpx.AsyncClient]] = {}
    spare: list[httpx.AsyncClient] = []
    deadline = time.monotonic() + PROBE_DEADLINE
    attempt = 0
    while not (len(found) == 2 and all(len(side) == IN_FLIGHT for side in found.values())):
        if time.monotonic() > deadline:
            break
        attempt += 1
        http = httpx.AsyncClient(base_url=process.base_url, timeout=60, limits=httpx.Limits(max_connections=1))
        token = await admin.ok("POST", "/api/token/", json={"name": f"probe{attempt}", "remain_quota": 10**7,
                                                             "expired_time": -1})
        key = "sk-" + (await admin.ok("POST", f"/api/token/{token['id']}/key"))["key"]
        assert (await call(http, key, 10)).status_code == 200
        worker = lease_worker(process.env["FAREGATE_DATA_DIR"], token["id"])
        assert worker is not None
        side = found.setdefault(worker, [])
        (side if len(side) < IN_FLIGHT else spare).append(http)
    for http in spare:
        await http.aclose()
    sides = list(found.values())
    assert len(sides) == 2 and all(len(side) == IN_FLIGHT for side in sides), (
        f"connections to both workers after {attempt} probes: {[len(side) for side in sides]}")
    return sides


async def test_two_workers_serve_a_small_balance(tmp_path: Any, upstream: GatedOpenAI) -> None:
    process = GatewayProcess(str(tmp_path / "gw"), workers=2)
    await asyncio.to_thread(process.start)
    admin = AdminClient(process.base_url)
    sides: list[list[httpx.AsyncClient]] = []
    try:
        await prepare(admin, upstream)
        sides = await connections_per_worker(admin, process)
        await assert_all_served(admin, upstream, sides, "w")
    finally:
        for side in sides:
            for http in side:
                await http.aclose()
        await admin.close()
        await asyncio.to_thread(process.stop)


# ---- two nodes ---------------------------------------------------------------------------


@pytest.fixture
def redis_url() -> str:
    import redis

    url = "redis://127.0.0.1:6379/0"
    try:
        redis.Redis.from_url(url).ping()
    except redis.RedisError:
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    return url


@pytest.mark.mariadb
async def test_two_nodes_serve_a_small_balance(tmp_path: Any, upstream: GatedOpenAI, mariadb_url: str,
                                               redis_url: str) -> None:
    shared = {"FAREGATE_DB_URL": mariadb_url, "FAREGATE_REDIS_URL": redis_url,
              "FAREGATE_CRYPTO_SECRET": "shared-crypto-secret", "FAREGATE_SESSION_SECRET": "shared-session-secret"}
    nodes = [GatewayProcess(str(tmp_path / name), env=shared) for name in ("a", "b")]
    for node in nodes:
        await asyncio.to_thread(node.start)
    admin = AdminClient(nodes[0].base_url)
    sides = [httpx.AsyncClient(base_url=node.base_url, timeout=60) for node in nodes]
    try:
        await prepare(admin, upstream)
        # a pool per node: its requests in flight at once go over as many connections
        await assert_all_served(admin, upstream, [[http] * IN_FLIGHT for http in sides], "n")
    finally:
        for http in sides:
            await http.aclose()
        await admin.close()
        for node in nodes:
            await asyncio.to_thread(node.stop)
