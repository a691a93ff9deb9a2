"""Rate limits over Redis (issue 29, item 3): one Lua script per request decides every limit
atomically on Redis's clock, so the limits hold summed over workers and nodes; when Redis is
unreachable they fail open (a warning once, a metric) and money stays exact (the database's)."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
import redis.asyncio as aioredis

from faregate.db import models as m
from faregate.limits.redis_store import RedisStore
from faregate.limits.store import ADJUST, GCRA, LEASE, LOG, RECORD, RELEASE, Check, Update
from faregate.testing.harness import AdminClient, GatewayProcess, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

REDIS_URL = "redis://127.0.0.1:6379/13"
UNREACHABLE = "redis://127.0.0.1:1/0"
MODEL = "gpt-4o-mini"


@pytest_asyncio.fixture
async def client() -> AsyncIterator[aioredis.Redis]:
    redis = aioredis.from_url(REDIS_URL)
    try:
        await redis.ping()
    except (aioredis.RedisError, OSError):
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    # the gateways of these tests number their keys from 1: forget an earlier run's counters
    async for key in redis.scan_iter(match="faregate:limit:*", count=500):
        await redis.delete(key)
    yield redis
    await redis.aclose()


def _key() -> str:
    return f"faregate:limit:test:{uuid.uuid4().hex}"


async def test_gcra_log_and_leases_in_redis(client: aioredis.Redis) -> None:
    store = RedisStore(aioredis.from_url(REDIS_URL))
    rpm = [Check(_key(), GCRA, 3, 60_000)]
    assert [(await store.admit(rpm, "r")).admitted for _ in range(4)] == [True, True, True, False]
    refused = await store.admit(rpm, "r")
    assert 0 < refused.wait_ms <= 20_000 and refused.remaining == [0]

    success = Check(_key(), LOG, 2, 60_000)
    for _ in range(3):
        assert (await store.admit([success], "r")).admitted  # checked, not counted
    await store.settle([Update(success.key, RECORD, 2, 60_000)] * 2)
    assert not (await store.admit([success], "r")).admitted

    lease = Check(_key(), LEASE, 1, 60_000)
    assert (await store.admit([lease], "one")).admitted
    assert not (await store.admit([lease], "two")).admitted
    await store.settle([Update(lease.key, RELEASE, 1, 60_000, member="one")])
    assert (await store.admit([lease], "three")).admitted
    await store.aclose()


async def test_tokens_corrected_at_settlement(client: aioredis.Redis) -> None:
    store = RedisStore(aioredis.from_url(REDIS_URL))
    tpm = Check(_key(), GCRA, 1000, 60_000, 100)
    assert (await store.admit([tpm], "r")).admitted
    await store.settle([Update(tpm.key, ADJUST, 1000, 60_000, 1400)])  # the answer used 1,500, not 100
    refused = await store.admit([tpm], "r")
    assert not refused.admitted and refused.remaining == [0] and refused.wait_ms > 0
    await store.settle([Update(tpm.key, ADJUST, 1000, 60_000, -1500)])  # given back (a refund)
    assert (await store.admit([tpm], "r")).remaining == [1000]
    await store.aclose()


async def test_a_refusal_counts_nothing(client: aioredis.Redis) -> None:
    store = RedisStore(aioredis.from_url(REDIS_URL))
    loose, tight = Check(_key(), GCRA, 5, 60_000), Check(_key(), GCRA, 1, 60_000)
    assert (await store.admit([loose, tight], "r")).admitted
    for _ in range(3):
        assert (await store.admit([loose, tight], "r")).refused == 1
    assert (await store.admit([loose], "r")).remaining == [4]
    await store.aclose()


async def test_exact_across_stores_at_once(client: aioredis.Redis) -> None:
    """Four stores (four workers' connections), 40 requests at once, a limit of 7: exactly 7."""
    stores = [RedisStore(aioredis.from_url(REDIS_URL)) for _ in range(4)]
    check = [Check(_key(), GCRA, 7, 60_000)]
    verdicts = await asyncio.gather(*(stores[n % 4].admit(check, f"r{n}") for n in range(40)))
    assert sum(v.admitted for v in verdicts) == 7
    for store in stores:
        await store.aclose()


async def test_unreachable_redis_fails_open(caplog: pytest.LogCaptureFixture) -> None:
    told: list[int] = []
    store = RedisStore(aioredis.from_url(UNREACHABLE, socket_connect_timeout=0.5), [lambda: told.append(1)])
    check = [Check(_key(), GCRA, 1, 60_000)]
    with caplog.at_level(logging.WARNING, "faregate.limits"):
        verdicts = [await store.admit(check, "r") for _ in range(3)]
        await store.settle([Update(check[0].key, RELEASE, 1, 60_000, member="r")])
    assert all(v.admitted for v in verdicts)
    assert len(told) == 3
    assert [r.getMessage() for r in caplog.records].count(
        "redis unreachable (ConnectionError): rate limits are not enforced until it answers again") == 1
    await store.aclose()


async def test_gateway_fails_open_and_charges_exactly(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server: GatewayServer = await make_gateway()
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
    key = await admin.add_token(remain_quota=10**7, rpm_limit=1)
    limiter = server.gateway.limiter
    limiter.store = RedisStore(aioredis.from_url(UNREACHABLE, socket_connect_timeout=0.5), limiter.failures)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        for _ in range(3):
            resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                                   json={"model": MODEL, "max_tokens": 5,
                                         "messages": [{"role": "user", "content": "hi"}]})
            assert resp.status_code == 200, resp.text
        metrics = (await http.get("/metrics")).text
    assert "faregate_rate_limit_unchecked_total 3.0" in metrics
    await server.gateway.ledger.flush()
    rows = await m.Log.filter(type=m.LOG_CONSUME).values_list("quota", flat=True)
    token = await m.Token.get(name="test")
    assert len(rows) == 3 and token.used_quota == sum(rows) > 0


async def test_metrics_count_what_a_gateway_configured_for_redis_lets_through(
        make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    """Configured with FAREGATE_REDIS_URL (not a store swapped in by the test): the limiter the
    gateway builds at start still tells the metrics, which were attached when the app was built
    (the count stayed 0 when start() replaced the limiter and its listeners with it)."""
    server: GatewayServer = await make_gateway(settings={"redis_url": UNREACHABLE})
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
    key = await admin.add_token(remain_quota=10**7, rpm_limit=1)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        for _ in range(2):
            resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                                   json={"model": MODEL, "max_tokens": 5,
                                         "messages": [{"role": "user", "content": "hi"}]})
            assert resp.status_code == 200, resp.text
        metrics = (await http.get("/metrics")).text
    await admin.close()
    assert "faregate_rate_limit_unchecked_total 2.0" in metrics


# ---- two workers of one node over Redis ---------------------------------------------------


def _lease_worker(data_dir: str, token_id: int) -> str | None:
    with sqlite3.connect(f"file:{os.path.join(data_dir, 'faregate.db')}?mode=ro", uri=True, timeout=10) as db:
        row = db.execute("SELECT worker FROM quota_leases WHERE kind = 'token' AND ref_id = ?",
                         (token_id,)).fetchone()
    return None if row is None else str(row[0])


async def _ask(http: httpx.AsyncClient, key: str) -> int:
    resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                           json={"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
    return resp.status_code


async def _one_connection_per_worker(admin: AdminClient, process: GatewayProcess) -> list[httpx.AsyncClient]:
    """A keep-alive connection to each worker: a probe key's quota lease names the worker that served it."""
    found: dict[str, httpx.AsyncClient] = {}
    for attempt in range(16):
        http = httpx.AsyncClient(base_url=process.base_url, timeout=60, limits=httpx.Limits(max_connections=1))
        token = await admin.ok("POST", "/api/token/", json={"name": f"probe{attempt}", "remain_quota": 10**7,
                                                             "expired_time": -1})
        key = "sk-" + (await admin.ok("POST", f"/api/token/{token['id']}/key"))["key"]
        assert await _ask(http, key) == 200
        worker = _lease_worker(process.env["FAREGATE_DATA_DIR"], token["id"])
        if worker is None or worker in found:
            await http.aclose()
            continue
        found[worker] = http
        if len(found) == 2:
            break
    assert len(found) == 2, "a connection to each worker"
    return list(found.values())


async def test_two_workers_share_the_limits(tmp_path: Any, fake_openai: FakeOpenAI,
                                            client: aioredis.Redis) -> None:
    process = GatewayProcess(str(tmp_path / "gw"), workers=2, env={"FAREGATE_REDIS_URL": REDIS_URL})
    await asyncio.to_thread(process.start)
    admin = AdminClient(process.base_url)
    sides: list[httpx.AsyncClient] = []
    try:
        await admin.setup_root()
        await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
        sides = await _one_connection_per_worker(admin, process)
        key = await admin.add_token(unlimited=True, name="limited", rpm_limit=4)
        answers = [await _ask(sides[n % 2], key) for n in range(8)]
        assert sorted(answers) == [200] * 4 + [429] * 4, answers
        # new-api's per-user limit too: every key of the user, on either worker
        await admin.set_option("ModelRequestRateLimitEnabled", "true")
        await admin.set_option("ModelRequestRateLimitCount", "3")
        other = await admin.add_token(unlimited=True, name="other")
        answers = [await _ask(sides[n % 2], other) for n in range(6)]
        assert sorted(answers) == [200] * 3 + [429] * 3, answers
    finally:
        for http in sides:
            await http.aclose()
        await admin.close()
        await asyncio.to_thread(process.stop)
