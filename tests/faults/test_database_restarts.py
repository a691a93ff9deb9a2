"""The database restarts under load (issue 29, item 5): a private MariaDB (or PostgreSQL)
server, its own process on its own port, is killed while a gateway serves billed requests,
then started again on the same data. The contract (docs/operations.md, "Database and Redis
outages"):

* while it is down, a request that needs the database (a quota lease) is answered 503
  ``db_unavailable`` at once, never hangs and never gets a 500; requests a worker can pay
  from quota it leased before still succeed;
* once it is back, the same gateway process serves again: the pools reconnect;
* no charge is lost or doubled: the ledger keeps what it could not write and writes it
  after the restart, so every 200 has exactly one log row, the charged totals are the logged
  totals, and the quota spent plus what is left is what the key was given.

A server that hangs (SIGSTOP) instead costs a request that needs it the ledger's lease timeout,
then the same 503. Redis killed and restarted under load on two nodes: the rate limits fail open
(counted), nothing gets a 5xx, and a change made meanwhile reaches the other node once Redis is back.

The servers the other tests share are never touched (:mod:`faregate.testing.private_servers`)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import pytest
import pytest_asyncio

from faregate.db.models import LOG_CONSUME
from faregate.testing.harness import AdminClient, GatewayProcess
from faregate.testing.private_servers import (
    PrivateMariaDB,
    PrivatePostgres,
    PrivateRedis,
    PrivateServer,
    ServerUnavailable,
)
from faregate_adapter_openai.testing import FakeOpenAI

MODEL = "gpt-4o-mini"
QUOTA = 500_000_000
CLIENTS = 12
#: a 503 while the database is down comes within this (a behaviour bound with room for a
#: loaded machine, not a benchmark: a hang would run into the client's 30 s timeout)
FAIL_FAST = 5.0
#: the gateway serves 200s again within this after the database accepts connections
RECOVERY = 30.0


@pytest_asyncio.fixture
async def upstream() -> AsyncIterator[FakeOpenAI]:
    # no spec validation: a load test (see test_crash_durability.py)
    async with FakeOpenAI(validate_requests=False) as fake:
        yield fake


ServerT = TypeVar("ServerT", bound=PrivateServer)


@contextlib.asynccontextmanager
async def running(make: Callable[[], ServerT]) -> AsyncIterator[ServerT]:
    """A private server made and started for the test (skipped when its binaries are missing),
    removed afterwards."""
    try:
        server = make()
        await asyncio.to_thread(server.start)
    except ServerUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        await asyncio.to_thread(server.remove)


@dataclass
class Tally:
    """What the clients saw: each answer's status, how long it took and its error code."""

    ok: dict[str, float] = field(default_factory=dict)  # request id -> when answered
    answers: list[tuple[float, int, float, str]] = field(default_factory=list)  # (at, status, seconds, code)

    def since(self, moment: float) -> list[tuple[float, int, float, str]]:
        return [a for a in self.answers if a[0] >= moment]


async def send(http: httpx.AsyncClient, base_url: str, key: str, tally: Tally) -> tuple[int, float, str]:
    """One request, counted in ``tally``: its status, seconds and error code."""
    began = time.monotonic()
    resp = await http.post(base_url + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                           json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
    now = time.monotonic()
    code = ""
    if resp.status_code == 200:
        tally.ok[resp.headers["X-Oneapi-Request-Id"]] = now
    else:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            code = str(resp.json()["error"]["code"])
    tally.answers.append((now, resp.status_code, now - began, code))
    return resp.status_code, now - began, code


async def client(base_url: str, key: str, tally: Tally, stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        while not stop.is_set():
            if (await send(http, base_url, key, tally))[0] != 200:
                await asyncio.sleep(0.05)  # a client backs off a little on an error


async def one(base_url: str, key: str, tally: Tally) -> tuple[int, float, str]:
    async with httpx.AsyncClient(timeout=30) as http:
        return await send(http, base_url, key, tally)


async def until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.05)
    return condition()


async def setup_gateway(proc: GatewayProcess, upstream: FakeOpenAI, keys: int) -> dict[int, str]:
    """A channel to the fake upstream and ``keys`` keys of ``QUOTA`` each (token id -> key)."""
    admin = AdminClient(proc.base_url)
    made: dict[int, str] = {}
    try:
        await admin.setup_root()
        await admin.add_channel(base_url=upstream.base_url, models=MODEL)
        for n in range(keys):
            token = await admin.ok("POST", "/api/token/", json={"name": f"k{n}", "remain_quota": QUOTA,
                                                                 "expired_time": -1})
            made[int(token["id"])] = "sk-" + (await admin.ok("POST", f"/api/token/{token['id']}/key"))["key"]
    finally:
        await admin.close()
    return made


Query = Callable[[str, tuple[Any, ...]], Awaitable[list[tuple[Any, ...]]]]


async def reconcile(query: Query, mark: str, token_ids: list[int], tally: Tally) -> None:
    """Every 200 has exactly one log row and nothing else has one; the charged totals are the
    logged totals; what each key spent, has leased out and has left is what it was given."""
    logged_total = 0
    ids: list[str] = []
    for token_id in token_ids:
        rows = await query(f"SELECT request_id, quota FROM logs WHERE type = {mark} AND token_id = {mark}",
                           (LOG_CONSUME, token_id))
        ids += [str(r[0]) for r in rows]
        logged = sum(int(r[1]) for r in rows)
        logged_total += logged
        ((remain, used),) = await query(f"SELECT remain_quota, used_quota FROM tokens WHERE id = {mark}",
                                        (token_id,))
        ((held,),) = await query(f"SELECT COALESCE(SUM(held), 0) FROM quota_leases WHERE kind = 'token' "
                                 f"AND ref_id = {mark}", (token_id,))
        assert int(used) == logged, f"key {token_id}: charged {used}, logged {logged}"
        assert int(remain) + int(held) + int(used) == QUOTA, f"key {token_id}: {remain} + {held} + {used}"
    assert len(ids) == len(set(ids)), "a request was charged twice"
    assert set(ids) == set(tally.ok), (f"answered 200 without a row: {len(set(tally.ok) - set(ids))}, "
                                       f"a row without a 200: {len(set(ids) - set(tally.ok))}")
    ((user_used,),) = await query(f"SELECT used_quota FROM users WHERE id = (SELECT user_id FROM tokens "
                                  f"WHERE id = {mark})", (token_ids[0],))
    assert int(user_used) == logged_total


async def restart_under_load(database: PrivateServer, db_url: str, upstream: FakeOpenAI, tmp_path: Any,
                             query: Query, mark: str) -> None:
    proc = GatewayProcess(str(tmp_path / "gw"), env={"FAREGATE_DB_URL": db_url, "FAREGATE_FLUSH_INTERVAL": "0.05"})
    await asyncio.to_thread(proc.start)
    try:
        # the load's key, and two keys first used while the database is down and after it is
        # back: those need a lease from the database (the load's key is mostly served from the
        # quota its worker leased before; a lease is at least 50,000 quota ahead)
        keys = await setup_gateway(proc, upstream, 3)
        load_key, down_key, up_key = keys.values()
        tally, stop = Tally(), asyncio.Event()
        clients = [asyncio.create_task(client(proc.base_url, load_key, tally, stop)) for _ in range(CLIENTS)]
        try:
            assert await until(lambda: len(tally.ok) >= 100, 60), "the gateway serves before the fault"
            await asyncio.to_thread(database.crash)
            down_at = time.monotonic()
            probes = [await one(proc.base_url, down_key, tally) for _ in range(10)]
            assert {(status, code) for status, _, code in probes} == {(503, "db_unavailable")}, probes
            slowest = max(seconds for _, seconds, _ in probes)
            assert slowest < FAIL_FAST, probes
            await asyncio.sleep(max(0.0, down_at + 2.0 - time.monotonic()))  # flushes fail meanwhile
            await asyncio.to_thread(database.start)
            up_at = time.monotonic()
            while (await one(proc.base_url, up_key, tally))[0] != 200:
                assert time.monotonic() - up_at < RECOVERY, "served again once the database is back: " + (
                    proc.logs()[-3000:])
                await asyncio.sleep(0.2)
            recovered = time.monotonic() - up_at
            assert await until(lambda: sum(1 for a in tally.since(up_at) if a[1] == 200) >= 50, RECOVERY)
            assert proc.proc is not None and proc.proc.poll() is None, "the same gateway process, never restarted"
        finally:
            stop.set()
            await asyncio.gather(*clients)
        down = [a for a in tally.answers if down_at <= a[0] <= up_at]
        statuses = {a[1] for a in tally.answers}
        assert statuses <= {200, 503}, f"only 200s and 503s, never a 500: {statuses}"
        assert {a[3] for a in tally.answers if a[1] == 503} == {"db_unavailable"}
        print(f"\n{type(database).__name__}: {len(tally.ok)} answered 200; while down "
              f"{up_at - down_at:.1f} s: {sum(1 for a in down if a[1] == 503)} 503 (a new key's slowest "
              f"{slowest:.2f} s), {sum(1 for a in down if a[1] == 200)} 200 from leased quota; "
              f"a new key served {recovered:.2f} s after the restart")
        await asyncio.sleep(1.0)  # the ledger writes what it kept
    finally:
        await asyncio.to_thread(proc.stop)  # a clean stop flushes and gives the leases back
    await reconcile(query, mark, list(keys), tally)


@pytest_asyncio.fixture
async def private_mariadb(tmp_path: Any) -> AsyncIterator[PrivateMariaDB]:
    pytest.importorskip("faregate_storage_mysql")
    async with running(lambda: PrivateMariaDB(str(tmp_path / "mariadb"))) as server:
        yield server


@pytest.mark.mariadb
async def test_mariadb_restart_under_load(private_mariadb: PrivateMariaDB, upstream: FakeOpenAI,
                                          tmp_path: Any) -> None:
    import pymysql

    db_url = await asyncio.to_thread(private_mariadb.create_database, "faregate")

    async def query(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        def run() -> list[tuple[Any, ...]]:
            conn = pymysql.connect(host="127.0.0.1", port=private_mariadb.port, user="root", database="faregate")
            try:
                with conn.cursor() as cursor:
                    cursor.execute(sql, args)
                    return list(cursor.fetchall())
            finally:
                conn.close()

        return await asyncio.to_thread(run)

    await restart_under_load(private_mariadb, db_url, upstream, tmp_path, query, "%s")


@pytest_asyncio.fixture
async def private_postgres(tmp_path: Any) -> AsyncIterator[PrivatePostgres]:
    pytest.importorskip("faregate_storage_postgres")
    async with running(lambda: PrivatePostgres(str(tmp_path / "postgres"))) as server:
        yield server


@pytest.mark.postgres
async def test_postgres_restart_under_load(private_postgres: PrivatePostgres, upstream: FakeOpenAI,
                                           tmp_path: Any) -> None:
    import asyncpg

    db_url = await asyncio.to_thread(private_postgres.create_database, "faregate")

    async def query(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        numbered = sql
        for n in range(1, len(args) + 1):
            numbered = numbered.replace("$?", f"${n}", 1)
        conn = await asyncpg.connect(host="127.0.0.1", port=private_postgres.port, user="postgres",
                                     database="faregate")
        try:
            return [tuple(row) for row in await conn.fetch(numbered, *args)]
        finally:
            await conn.close()

    await restart_under_load(private_postgres, db_url, upstream, tmp_path, query, "$?")


# ---- Redis -------------------------------------------------------------------------------


def unchecked(metrics: str) -> float:
    found = re.search(r"^faregate_rate_limit_unchecked_total (\S+)$", metrics, re.M)
    return float(found.group(1)) if found else 0.0


async def visible(base_url: str, key: str, seconds: float) -> bool:
    async with httpx.AsyncClient(timeout=10) as http:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            resp = await http.get(base_url + "/v1/models", headers={"Authorization": f"Bearer {key}"})
            if resp.status_code == 200:
                return True
            await asyncio.sleep(0.1)
    return False


@pytest.mark.mariadb
async def test_redis_restart_under_load(private_mariadb: PrivateMariaDB, upstream: FakeOpenAI, tmp_path: Any) -> None:
    """Two nodes share a database and a private Redis, under load on a key with a rate limit;
    Redis is killed and started again. While it is down the limits fail open (counted), requests
    keep flowing (no 5xx, no 429), and a change made meanwhile reaches the other node once Redis
    is back (the feed resubscribes and reads what it missed; the sync interval here is an hour),
    without restarting either node. Charges reconcile as always (they never touch Redis)."""
    async with running(lambda: PrivateRedis(str(tmp_path / "redis"))) as redis:
        db_url = await asyncio.to_thread(private_mariadb.create_database, "faregate")
        shared = {"FAREGATE_DB_URL": db_url, "FAREGATE_REDIS_URL": redis.url, "FAREGATE_FLUSH_INTERVAL": "0.05",
                  "FAREGATE_CRYPTO_SECRET": "shared-crypto-secret", "FAREGATE_SESSION_SECRET": "shared-session",
                  "FAREGATE_SYNC_INTERVAL": "3600"}  # only Redis may carry a change to the other node
        nodes = [GatewayProcess(str(tmp_path / name), env=shared) for name in ("a", "b")]
        await asyncio.to_thread(nodes[0].start)  # the first migrates
        await asyncio.to_thread(nodes[1].start)
        try:
            await redis_outage(redis, nodes, upstream, private_mariadb)
        finally:
            for node in nodes:
                await asyncio.to_thread(node.stop)


async def redis_outage(redis: PrivateRedis, nodes: list[GatewayProcess], upstream: FakeOpenAI,
                       database: PrivateMariaDB) -> None:
    node_a, node_b = nodes
    admin = AdminClient(node_a.base_url)
    try:
        await admin.setup_root()
        await admin.add_channel(base_url=upstream.base_url, models=MODEL)
        token = await admin.ok("POST", "/api/token/", json={"name": "load", "remain_quota": QUOTA, "expired_time": -1,
                                                             "rpm_limit": 1_000_000})
        key = "sk-" + (await admin.ok("POST", f"/api/token/{token['id']}/key"))["key"]
        assert await visible(node_b.base_url, key, 10)
        tally, stop = Tally(), asyncio.Event()
        clients = [asyncio.create_task(client(nodes[n % 2].base_url, key, tally, stop)) for n in range(CLIENTS)]
        try:
            assert await until(lambda: len(tally.ok) >= 100, 60), "the nodes serve before the fault"
            await asyncio.to_thread(redis.crash)
            down_at = time.monotonic()
            during = await admin.add_token(name="made-while-redis-was-down")
            await asyncio.sleep(max(0.0, down_at + 3.0 - time.monotonic()))  # past the limiter's retry pause
            served_down = sum(1 for a in tally.since(down_at) if a[1] == 200)
            await asyncio.to_thread(redis.start)
            up_at = time.monotonic()
            assert await visible(node_b.base_url, during, 15), "the change made during the outage reached node b"
            reached = time.monotonic() - up_at
            assert await until(lambda: sum(1 for a in tally.since(up_at) if a[1] == 200) >= 50, RECOVERY)
        finally:
            stop.set()
            await asyncio.gather(*clients)
        async with httpx.AsyncClient(timeout=10) as http:
            metrics = (await http.get(node_a.base_url + "/metrics")).text
    finally:
        await admin.close()
    statuses = collections.Counter(a[1] for a in tally.answers)
    assert set(statuses) == {200}, (f"requests keep flowing, no 5xx and no 429: {statuses} "
                                    f"{[a for a in tally.answers if a[1] != 200]} " + "\n".join(
                                        line for node in nodes for line in node.logs().splitlines()
                                        if "ERROR" in line or "status=5" in line or "Error" in line))
    assert unchecked(metrics) > 0, "requests served while Redis was down are counted as unchecked"
    assert all(node.proc is not None and node.proc.poll() is None for node in nodes)
    print(f"\nRedis down {up_at - down_at:.1f} s: {served_down} answered 200 meanwhile "
          f"({unchecked(metrics):.0f} unchecked on node a); a change made meanwhile reached the other node "
          f"{reached:.2f} s after Redis came back")
    for node in nodes:
        await asyncio.to_thread(node.stop)  # flushed and leases given back

    import pymysql

    async def query(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        def run() -> list[tuple[Any, ...]]:
            conn = pymysql.connect(host="127.0.0.1", port=database.port, user="root", database="faregate")
            try:
                with conn.cursor() as cursor:
                    cursor.execute(sql, args)
                    return list(cursor.fetchall())
            finally:
                conn.close()

        return await asyncio.to_thread(run)

    await reconcile(query, "%s", [int(token["id"])], tally)


# ---- a database that hangs ----------------------------------------------------------------

#: a request waiting for a lease from a database that does not answer gets its 503 after the
#: ledger's lease timeout (10 s); the margin is for a loaded machine
HANG_BOUND = 20.0


@pytest.mark.mariadb
async def test_a_hung_mariadb_is_a_503_after_a_bounded_wait(private_mariadb: PrivateMariaDB, upstream: FakeOpenAI,
                                                           tmp_path: Any) -> None:
    """The server stops answering (SIGSTOP) with the pool's connections open: a request that
    needs a lease gets a 503 ``db_unavailable`` after a bounded wait, never a hang until the
    client gives up; once the server answers again the same gateway serves that key, and what
    was leased while the request waited is not lost (the charges reconcile)."""
    import pymysql

    db_url = await asyncio.to_thread(private_mariadb.create_database, "faregate")
    proc = GatewayProcess(str(tmp_path / "gw"), env={"FAREGATE_DB_URL": db_url, "FAREGATE_FLUSH_INTERVAL": "0.05"})
    await asyncio.to_thread(proc.start)
    tally = Tally()
    try:
        keys = await setup_gateway(proc, upstream, 2)
        warm_key, hung_key = keys.values()
        assert (await one(proc.base_url, warm_key, tally))[0] == 200
        await asyncio.to_thread(private_mariadb.freeze)
        try:
            async with httpx.AsyncClient(timeout=60) as http:
                status, seconds, code = await send(http, proc.base_url, hung_key, tally)
        finally:
            await asyncio.to_thread(private_mariadb.thaw)
        print(f"\nhung MariaDB: a key needing a lease answered {status} {code} after {seconds:.1f} s")
        assert (status, code) == (503, "db_unavailable")
        assert seconds < HANG_BOUND
        deadline = time.monotonic() + RECOVERY
        while (await one(proc.base_url, hung_key, tally))[0] != 200:
            assert time.monotonic() < deadline, proc.logs()[-3000:]
            await asyncio.sleep(0.2)
    finally:
        await asyncio.to_thread(proc.stop)

    async def query(sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        def run() -> list[tuple[Any, ...]]:
            conn = pymysql.connect(host="127.0.0.1", port=private_mariadb.port, user="root", database="faregate")
            try:
                with conn.cursor() as cursor:
                    cursor.execute(sql, args)
                    return list(cursor.fetchall())
            finally:
                conn.close()

        return await asyncio.to_thread(run)

    await reconcile(query, "%s", list(keys), tally)
