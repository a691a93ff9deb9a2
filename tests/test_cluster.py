"""A cluster, proven (issue 29, item 4): two nodes of two workers each on loopback, sharing
MariaDB (once PostgreSQL) and Redis, as two hosts would.

Concurrent billed traffic goes through both nodes while a channel, a key and an option change;
then: every request that could pay was served, the ledger reconciles exactly (each answer one
log row; the wallet, the key and the log agree to the unit), a per-key rpm limit holds summed
over the four workers, the wallet's quota warning goes out once for the cluster, and the
background jobs run once per cluster and move to the other node when the node running them is
killed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from faregate.channel_monitor import ENABLED, MINUTES
from faregate.db import models as m
from faregate.db import storage
from faregate.db.cluster_jobs import KEY_PREFIX, LeaseState
from faregate.gateway import Gateway
from faregate.plugins import load_plugins
from faregate.testing.harness import AdminClient, GatewayProcess
from faregate_adapter_openai.testing import FakeOpenAI

MODEL = "cluster-model"
TRAFFIC = "cluster traffic"  # the traffic's message: what the channel monitor's tests are not
#: a Redis database of this test's own: the limits' keys are named by key id, which every
#: fresh database numbers from 1
REDIS_URL = "redis://127.0.0.1:6379/11"
CLIENTS_PER_NODE = 6
CALLS_PER_CLIENT = 12
WALLET = 10_000_000
KEY_QUOTA = 1_000_000
RPM = 10
#: the payer is warned once the traffic spent a little of the wallet (it spends several thousand)
WARN_BELOW = WALLET - 1_000
LEASE = 1.5  # seconds: job leases are renewed every 0.5 s and taken over 1.5 s after their holder died
#: how long to wait for what takes a fraction of a second on a quiet machine
PATIENCE = 90.0
#: what the refused calls answered (for the failure messages)
REFUSALS: list[str] = []


# ---- the cluster -------------------------------------------------------------------------


@pytest.fixture
def redis_url() -> str:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        stale = list(client.scan_iter("faregate:*"))
    except redis.RedisError:
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    if stale:  # an earlier run's limits (never another test's: the database is this test's)
        client.delete(*stale)
    return REDIS_URL


@pytest.fixture(params=[pytest.param("mariadb", marks=pytest.mark.mariadb),
                        pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture
async def nodes(tmp_path: Path, db_url: str, redis_url: str) -> AsyncIterator[list[GatewayProcess]]:
    shared = {"FAREGATE_DB_URL": db_url, "FAREGATE_REDIS_URL": redis_url,
              "FAREGATE_CRYPTO_SECRET": "cluster-crypto-secret", "FAREGATE_SESSION_SECRET": "cluster-session-secret",
              "FAREGATE_JOB_LEASE_SECONDS": str(LEASE), "FAREGATE_RETENTION_INTERVAL": "1",
              "FAREGATE_LEASE_IDLE_SECONDS": "1", "FAREGATE_NOTIFY_PRIVATE_ADDRESSES": "allow"}
    started = [GatewayProcess(str(tmp_path / name), workers=2, env=shared) for name in ("a", "b")]
    # at once, as a cluster restarts: one node applies the migrations, the other waits for its lock
    await asyncio.gather(*(asyncio.to_thread(node.start) for node in started))
    # the test reads the shared database itself
    reader = Gateway(load_plugins(), {"db_url": db_url, "data_dir": str(tmp_path / "reader")})
    await storage.open_storage(reader.db_config)
    try:
        yield started
    finally:
        await storage.close_storage()
        for node in started:
            await asyncio.to_thread(node.stop)


def workers_of(node: GatewayProcess) -> set[int]:
    """The pids of the node's worker processes (the supervisor's children)."""
    assert node.proc is not None
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/stat") as fh:
                # the parent's pid is the 4th field, after the parenthesised command name
                if int(fh.read().rsplit(")", 1)[1].split()[1]) == node.proc.pid:
                    found.add(int(entry))
    return found


def pid_of(holder: str) -> int:
    """A lease holder is a ledger worker id: ``<host key>-<pid>-<random>``."""
    return int(holder.split("-")[1])


async def lease(job: str) -> LeaseState | None:
    row = await m.Option.get_or_none(key=KEY_PREFIX + job)
    return None if row is None else LeaseState.parse(row.value)


class Webhook:
    """A webhook endpoint on 127.0.0.1 counting the calls it gets."""

    def __init__(self) -> None:
        self.calls = 0
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Webhook:
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/hook"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            await reader.readuntil(b"\r\n\r\n")
            self.calls += 1
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            await writer.drain()
        writer.close()


async def eventually(check: Any, what: str) -> Any:
    deadline = time.monotonic() + PATIENCE
    while True:
        result = await check()
        if result:
            return result
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.1)


# ---- traffic -----------------------------------------------------------------------------


async def ask(http: httpx.AsyncClient, key: str, text: str = TRAFFIC) -> int:
    resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                           json={"model": MODEL, "max_tokens": 20, "messages": [{"role": "user", "content": text}]})
    if resp.status_code != 200:
        REFUSALS.append(f"{resp.status_code} {http.base_url} {resp.text[:300]}")
    return resp.status_code


async def known_everywhere(nodes: list[GatewayProcess], key: str) -> None:
    """Every node answers the key (another node learns a new one through Redis)."""
    for node in nodes:
        async with httpx.AsyncClient(base_url=node.base_url, timeout=30) as http:
            async def known(http: httpx.AsyncClient = http) -> bool:
                resp = await http.get("/v1/models", headers={"Authorization": f"Bearer {key}"})
                return resp.status_code == 200

            await eventually(known, f"{node.base_url} knows the key")


async def traffic(nodes: list[GatewayProcess], key: str, changes: Any) -> list[int]:
    """CLIENTS_PER_NODE clients per node, each CALLS_PER_CLIENT calls back to back on its own
    connection, all at once; ``changes`` runs once a third of the calls were answered."""
    answered: list[int] = []
    third = asyncio.Event()
    total = len(nodes) * CLIENTS_PER_NODE * CALLS_PER_CLIENT

    async def client(base_url: str) -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
            for _ in range(CALLS_PER_CLIENT):
                answered.append(await ask(http, key))
                if len(answered) >= total // 3:
                    third.set()

    async def change_mid_run() -> None:
        await third.wait()
        await changes()

    await asyncio.gather(change_mid_run(), *(client(node.base_url) for node in nodes
                                             for _ in range(CLIENTS_PER_NODE)))
    return answered


async def burst(nodes: list[GatewayProcess], key: str, count: int) -> list[int]:
    """``count`` calls at once, spread over both nodes, each on its own connection."""
    clients = [httpx.AsyncClient(base_url=nodes[i % len(nodes)].base_url, timeout=60) for i in range(count)]
    try:
        return list(await asyncio.gather(*(ask(http, key) for http in clients)))
    finally:
        for http in clients:
            await http.aclose()


# ---- the test ----------------------------------------------------------------------------


async def test_a_cluster_of_two_nodes_of_two_workers(nodes: list[GatewayProcess]) -> None:
    admin = AdminClient(nodes[0].base_url)
    payer = AdminClient(nodes[1].base_url)
    try:
        async with FakeOpenAI(models=[MODEL]) as first, FakeOpenAI(models=[MODEL]) as second, Webhook() as hook:
            await run_the_cluster(nodes, admin, payer, first, second, hook)
    finally:
        await admin.close()
        await payer.close()


async def run_the_cluster(nodes: list[GatewayProcess], admin: AdminClient, payer: AdminClient,
                          first: FakeOpenAI, second: FakeOpenAI, hook: Webhook) -> None:
    await admin.setup_root()
    channel = await admin.add_channel(base_url=first.base_url, models=MODEL)
    await admin.set_option("ModelRatio", {MODEL: 1})
    await admin.set_option("CompletionRatio", {MODEL: 1})
    # a user whose wallet pays, through a limited key and a key with an rpm limit (made on the other node)
    await admin.ok("POST", "/api/user/", json={"username": "payer", "password": "payer-pass-1234"})
    users = await admin.ok("GET", "/api/user/search?keyword=payer")
    user_id = next(u["id"] for u in users["items"] if u["username"] == "payer")
    await admin.ok("PUT", "/api/user/", json={"id": user_id, "quota": WALLET})
    await payer.setup_root("payer", "payer-pass-1234")
    await payer.ok("PUT", "/api/user/setting", json={"notify_type": "webhook", "quota_warning_threshold": WARN_BELOW,
                                                     "webhook_url": hook.url, "webhook_secret": "cluster-hook"})
    key = await payer.add_token(remain_quota=KEY_QUOTA, name="traffic")
    limited = await payer.add_token(unlimited=True, name="limited", rpm_limit=RPM)
    tokens = {t["name"]: t for t in (await payer.ok("GET", "/api/token/?p=1&size=10"))["items"]}
    for k in (key, limited):
        await known_everywhere(nodes, k)

    async def changes() -> None:
        # a channel (its upstream), a key (its name and a limit it stays under) and an option (the price)
        await admin.ok("PUT", "/api/channel/", json={"id": channel, "base_url": second.base_url})
        await payer.ok("PUT", "/api/token/", json={"id": tokens["traffic"]["id"], "name": "traffic-2",
                                                   "rpm_limit": 100_000})
        await admin.set_option("ModelRatio", {MODEL: 2})

    answers = await traffic(nodes, key, changes)
    # no request that could pay was refused, before, during or after the changes
    assert answers == [200] * len(answers), REFUSALS
    assert any(TRAFFIC in str(r.get("json")) for r in second.requests), "the channel's change reached the nodes"
    renamed = (await m.Token.get(id=tokens["traffic"]["id"]))
    assert renamed.name == "traffic-2"

    # the rpm limit holds summed over the four workers of the two nodes
    limited_answers = await burst(nodes, limited, 3 * RPM)
    assert sorted(limited_answers) == [200] * RPM + [429] * (2 * RPM), limited_answers

    await reconciles(user_id, tokens["traffic"]["id"], tokens["limited"]["id"], len(answers), RPM)
    # every worker charged the wallet below its threshold; one of them warned
    await eventually(lambda: asyncio.sleep(0, hook.calls), "the payer was warned")
    await jobs_run_once_per_cluster_and_move(nodes, admin, first, second)
    assert hook.calls == 1, "one quota warning for the cluster"


async def reconciles(user_id: int, key_id: int, limited_id: int, served: int, limited_served: int) -> None:
    """Every answer is one log row; the log's charges are what the wallet and the keys lost, to the
    unit (what workers still hold in leases counted where it is)."""

    async def held(kind: str, ref: int) -> int:
        return sum(int(v) for v in await m.QuotaLease.filter(kind=kind, ref_id=ref).values_list("held", flat=True))

    async def settled() -> bool:
        logs = await m.Log.filter(type=m.LOG_CONSUME, user_id=user_id).values("token_id", "quota")
        if len(logs) < served + limited_served:
            return False
        user = await m.User.get(id=user_id)
        key = await m.Token.get(id=key_id)
        spent = sum(int(r["quota"]) for r in logs)
        spent_by_key = sum(int(r["quota"]) for r in logs if r["token_id"] == key_id)
        return (user.used_quota == spent and user.quota + await held("user", user_id) == WALLET - spent
                and key.used_quota == spent_by_key
                and key.remain_quota + await held("token", key_id) == KEY_QUOTA - spent_by_key)

    await eventually(settled, "the ledger reconciles")
    logs = await m.Log.filter(type=m.LOG_CONSUME, user_id=user_id).values("token_id", "quota")
    assert len(logs) == served + limited_served, "one log row per answer, none lost or doubled"
    assert sum(1 for r in logs if r["token_id"] == limited_id) == limited_served
    assert all(int(r["quota"]) > 0 for r in logs)


async def jobs_run_once_per_cluster_and_move(nodes: list[GatewayProcess], admin: AdminClient,
                                             first: FakeOpenAI, second: FakeOpenAI) -> None:
    def probes() -> int:
        """Requests of the channel monitor's tests (not the traffic's)."""
        return sum(1 for fake in (first, second) for r in fake.requests if TRAFFIC not in str(r.get("json")))

    before = probes()
    # the channel monitor (a round a minute) and log retention (a round a second; keeping every row)
    await admin.set_option(MINUTES, 1)
    await admin.set_option(ENABLED, True)
    await admin.set_option("LogRetentionMaxRows", 10**9)

    async def tested() -> bool:
        return probes() > before

    await eventually(tested, "the channel monitor tested the channel")
    retention = await eventually(lambda: lease("log_retention"), "log retention ran")
    # four workers poll every LEASE / 3: over three leases, the one channel was tested once, and
    # retention stayed with its holder, which kept running it
    await asyncio.sleep(3 * LEASE)
    assert probes() == before + 1, "one round of the channel monitor in the cluster"
    now = await lease("log_retention")
    assert now is not None and now.holder == retention.holder and now.last_run > retention.last_run

    # the node running log retention dies; a worker of the other takes the job over
    dying = next(n for n in nodes if pid_of(now.holder) in workers_of(n))
    survivor = next(n for n in nodes if n is not dying)
    survivors = workers_of(survivor)
    assert dying.proc is not None
    for pid in [*workers_of(dying), dying.proc.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    killed_at = time.time()

    async def moved() -> LeaseState | None:
        state = await lease("log_retention")
        return state if state is not None and pid_of(state.holder) in survivors else None

    taken = await eventually(moved, "log retention moved to the surviving node")
    assert taken.last_run >= killed_at
