"""Two nodes (separate processes and data dirs, as on two hosts) sharing one database:
with Redis, a change made on one node reaches the other at once."""

from __future__ import annotations

import time

import httpx
import pytest

from faregate.testing.harness import GatewayProcess
from faregate_adapter_openai.testing import FakeOpenAI

PASSWORD = "scale-out-pw"


def _admin(base_url: str) -> httpx.Client:
    client = httpx.Client(base_url=base_url, timeout=30)
    client.post("/api/setup", json={"username": "root", "password": PASSWORD, "confirmPassword": PASSWORD})
    user = client.post("/api/user/login", json={"username": "root", "password": PASSWORD}).json()["data"]
    client.headers["New-Api-User"] = str(user["id"])
    return client


def _visible_within(base_url: str, key: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        resp = httpx.get(base_url + "/v1/models", headers={"Authorization": f"Bearer {key}"})
        if resp.status_code == 200:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def redis_available():
    import redis

    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/0").ping()
    except redis.RedisError:
        pytest.skip("Redis is not running on 127.0.0.1:6379")


@pytest.mark.mariadb
@pytest.mark.parametrize("with_redis", [True, False])
async def test_change_reaches_the_other_node(tmp_path, redis_available, with_redis, mariadb_url):
    # a server database, as two hosts share one (processes sharing a SQLite file are on one host,
    # and hear each other through the epoch beside it, Redis or not)
    shared = {
        "FAREGATE_DB_URL": mariadb_url,
        "FAREGATE_CRYPTO_SECRET": "shared-crypto-secret",
        "FAREGATE_SESSION_SECRET": "shared-session-secret",
        "FAREGATE_SYNC_INTERVAL": "3600",  # only the change feed's signal may deliver the change
    }
    if with_redis:
        shared["FAREGATE_REDIS_URL"] = "redis://127.0.0.1:6379/0"
    node_a = GatewayProcess(str(tmp_path / "a"), env=shared)
    node_b = GatewayProcess(str(tmp_path / "b"), env=shared)
    async with FakeOpenAI() as fake:
        node_a.start()
        node_b.start()
        try:
            admin = _admin(node_a.base_url)
            channel = {"type": 1, "key": "k", "name": "c", "base_url": fake.base_url, "models": "gpt-4o-mini",
                       "group": "default"}
            assert admin.post("/api/channel/", json={"mode": "single", "channel": channel}).json()["success"]
            token = admin.post("/api/token/", json={"name": "t", "remain_quota": 10**6, "expired_time": -1}).json()
            key = "sk-" + admin.post(f"/api/token/{token['data']['id']}/key").json()["data"]["key"]
            assert _visible_within(node_a.base_url, key, 1.0)
            assert _visible_within(node_b.base_url, key, 1.5) is with_redis
            admin.close()
        finally:
            node_a.stop()
            node_b.stop()
