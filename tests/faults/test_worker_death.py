"""One worker dies, the service lives on (issue 8, #9): ``faregate serve --workers 2``,
kill -9 one worker under traffic. The port keeps answering, the supervisor starts a
replacement, and the dead worker's quota leases go back to the balance at once (not at
the next start, not after the heartbeat goes stale)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest_asyncio

from faregate.testing.harness import AdminClient, GatewayProcess

MODEL = "gpt-4o-mini"
QUOTA = 50_000_000


@pytest_asyncio.fixture
async def process(tmp_path: Any) -> AsyncIterator[GatewayProcess]:
    # a heartbeat sweep far away: only the supervisor can return the leases in time
    proc = GatewayProcess(str(tmp_path / "gw"), workers=2, env={"FAREGATE_SWEEP_INTERVAL": "600",
                                                                  "FAREGATE_LEASE_IDLE_SECONDS": "600"})
    await asyncio.to_thread(proc.start)
    try:
        yield proc
    finally:
        await asyncio.to_thread(proc.stop)
        assert proc.proc is not None
        for pid in worker_pids(proc):  # a worker must never outlive the test
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def db(proc: GatewayProcess) -> sqlite3.Connection:
    return sqlite3.connect(os.path.join(proc.env["FAREGATE_DATA_DIR"], "faregate.db"), timeout=10)


def worker_pids(proc: GatewayProcess) -> set[int]:
    """Pids the supervisor reported starting."""
    return {int(line.rsplit(" ", 1)[1]) for line in proc.logs().splitlines() if "started worker pid" in line}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a reaped child is gone; an unreaped one is a zombie: read its state
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"


def leases(proc: GatewayProcess, token_id: int) -> dict[int, int]:
    """Quota each worker (by pid, read from its id) holds on the token."""
    with db(proc) as conn:
        rows = conn.execute("SELECT worker, held FROM quota_leases WHERE kind = 'token' AND ref_id = ?",
                            (token_id,)).fetchall()
    return {int(worker.split("-")[1]): held for worker, held in rows}


def money(proc: GatewayProcess, token_id: int) -> int:
    """The token's balance + what workers hold of it + what was charged: always QUOTA."""
    with db(proc) as conn:
        remain, used = conn.execute("SELECT remain_quota, used_quota FROM tokens WHERE id = ?",
                                    (token_id,)).fetchone()
        held = conn.execute("SELECT COALESCE(SUM(held), 0) FROM quota_leases WHERE kind = 'token' AND ref_id = ?",
                            (token_id,)).fetchone()[0]
    return int(remain + held + used)


async def chat(base_url: str, key: str) -> int:
    # a new connection each time: a kept-alive one may belong to the worker about to die
    async with httpx.AsyncClient(timeout=30) as http:
        resp = await http.post(base_url + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                               json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
        return resp.status_code


async def status(base_url: str) -> int:
    # a new connection, as chat(): the admin client's kept-alive one may be the killed worker's,
    # and a request sent on it before the kernel closed it fails (seen once in a full run)
    async with httpx.AsyncClient(timeout=30) as http:
        return (await http.get(base_url + "/api/status")).status_code


async def test_a_killed_worker_is_replaced_and_its_leases_return(fake_openai: Any, process: GatewayProcess) -> None:
    admin = AdminClient(process.base_url)
    try:
        await admin.setup_root()
        await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
        token = await admin.ok("POST", "/api/token/", json={"name": "w", "remain_quota": QUOTA, "expired_time": -1})
        key = "sk-" + (await admin.ok("POST", f"/api/token/{token['id']}/key"))["key"]
        first = worker_pids(process)
        assert len(first) == 2

        # traffic until both workers hold a lease on the key (the kernel spreads connections)
        deadline = time.monotonic() + 10
        while len(leases(process, token["id"])) < 2:
            assert time.monotonic() < deadline, "the requests never reached both workers"
            assert await asyncio.gather(*(chat(process.base_url, key) for _ in range(10))) == [200] * 10
        held = leases(process, token["id"])
        victim = next(iter(held))
        assert held[victim] > 0 and money(process, token["id"]) == QUOTA

        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        replaced = returned = False
        while not (replaced and returned):
            assert time.monotonic() - killed_at < 10, (replaced, returned, process.logs())
            # the port answers all along, relay and management alike
            assert await asyncio.gather(*(chat(process.base_url, key) for _ in range(4))) == [200] * 4
            assert await status(process.base_url) == 200
            replaced = any(alive(pid) for pid in worker_pids(process) - first)
            returned = victim not in leases(process, token["id"])
            await asyncio.sleep(0.1)

        assert process.proc is not None and process.proc.poll() is None, "the master is alive"
        assert not alive(victim)
        assert sum(alive(pid) for pid in worker_pids(process)) == 2
        with db(process) as conn:
            workers = [w for (w,) in conn.execute("SELECT id FROM workers")]
        assert all(int(w.split("-")[1]) != victim for w in workers), "the dead worker is forgotten"
        # nothing leaked: balance + leases + charges still add up to what the key was given
        assert money(process, token["id"]) == QUOTA
        assert "exited (code -9)" in process.logs()
    finally:
        await admin.close()


def test_restart_delay_backs_off() -> None:
    from faregate.supervisor import MAX_DELAY, restart_delay

    delays = [restart_delay(n) for n in range(1, 10)]
    assert delays[0] == 0.0, "a first death is replaced at once"
    assert delays == sorted(delays) and delays[1] > 0 and delays[-1] == MAX_DELAY
