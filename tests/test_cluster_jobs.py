"""Background jobs run once per cluster (issue 29, item 4): two processes run the same job's
loop (faregate.db.cluster_jobs) against one database, with a short lease and period; only
the holder of the job's lease runs it, and when the holder is killed the other process takes
the job over once the lease expires, never before."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faregate.db import models as m
from faregate.db import storage
from faregate.db.cluster_jobs import KEY_PREFIX, LeaseState
from faregate.gateway import Gateway
from faregate.plugins import load_plugins

LEASE = 0.9  # seconds; each process polls every 0.3 s
PERIOD = 0.1  # due at every poll of the holder
#: how long to wait for something that takes a fraction of a second on a quiet machine
PATIENCE = 120.0

#: one worker of the cluster: the job ``probe`` writes "start end" per run to <out>/<holder>
DRIVER = r"""
import asyncio, logging, os, sys, time
from faregate.db import storage
from faregate.db.cluster_jobs import ClusterJob, ClusterJobs
from faregate.gateway import Gateway
from faregate.plugins import load_plugins

async def main(db_url, data_dir, holder, out, lease, period):
    logging.basicConfig(level=logging.INFO)
    gw = Gateway(load_plugins(), {"db_url": db_url, "data_dir": data_dir})
    await storage.open_storage(gw.db_config)
    runs = os.path.join(out, holder)

    async def run():
        started = time.time()
        await asyncio.sleep(0.02)
        with open(runs, "a") as fh:
            fh.write(f"{started:.6f} {time.time():.6f}\n")

    jobs = ClusterJobs(holder, lease)
    jobs.add(ClusterJob("probe", lambda: period, run))
    jobs.start()
    open(runs + ".ready", "w").close()
    await asyncio.Event().wait()

asyncio.run(main(*sys.argv[1:5], float(sys.argv[5]), float(sys.argv[6])))
"""


def runs_of(out: Path, holder: str) -> list[tuple[float, float]]:
    path = out / holder
    if not path.exists():
        return []
    lines = [line.split() for line in path.read_text().splitlines()]
    return [(float(a), float(b)) for a, b in lines if b]


def spawn(db_url: str, tmp_path: Path, holder: str, out: Path) -> subprocess.Popen[bytes]:
    with open(out / f"{holder}.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-c", DRIVER, db_url, str(tmp_path / holder), holder, str(out),
                                 str(LEASE), str(PERIOD)], stdout=subprocess.DEVNULL, stderr=log)


async def wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


async def lease_state() -> LeaseState:
    row = await m.Option.get(key=KEY_PREFIX + "probe")
    return LeaseState.parse(row.value)


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb),
                        pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/shared.db"
    return str(request.getfixturevalue(f"{request.param}_url"))


async def test_a_job_runs_in_one_process_and_moves_when_it_dies(tmp_path: Path, db_url: str) -> None:
    gw = Gateway(load_plugins(), {"db_url": db_url, "data_dir": str(tmp_path / "test")})
    await storage.migrate(gw.db_config, gw.backend.migration_lock(gw.db_url))
    await storage.open_storage(gw.db_config)
    out = tmp_path / "runs"
    out.mkdir()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for holder in ("a", "b"):
            procs[holder] = spawn(db_url, tmp_path, holder, out)
        await wait_for(lambda: all((out / f"{h}.ready").exists() for h in procs), "both processes started")
        # both poll now; whoever took the lease first runs the job, the other never does
        await wait_for(lambda: any(runs_of(out, h) for h in procs), "the job ran")
        holder = next(h for h in procs if runs_of(out, h))
        other = next(h for h in procs if h != holder)
        seen = len(runs_of(out, holder))
        await wait_for(lambda: len(runs_of(out, holder)) >= seen + 15, "the holder keeps running the job")
        assert runs_of(out, other) == [], "once per cluster: the other process never ran the job"
        assert (await lease_state()).holder == holder

        # the holder dies without giving the lease up: the other takes the job over once it expires
        procs[holder].send_signal(signal.SIGKILL)
        procs[holder].wait()
        last_of_dead = runs_of(out, holder)[-1]
        state = await lease_state()
        await wait_for(lambda: runs_of(out, other), "the other process took the job over")
        if state.holder == holder:  # read before the takeover: the dead holder's last expiry
            first_of_other = runs_of(out, other)[0][0]
            assert first_of_other >= state.expires, "taken over only once the lease expired"
            # the poll after the expiry takes it; a loaded machine may be late by seconds
            print(f"taken over {first_of_other - state.expires:.2f} s after the lease expired")
        assert runs_of(out, other)[0][0] > last_of_dead[1]
        assert (await lease_state()).holder == other
        logs = (out / f"{other}.log").read_text()
        assert f"took the lease over from {holder}" in logs
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        await storage.close_storage()


# ---- the lease's rules, in one process ---------------------------------------------------------


async def test_a_run_cut_short_by_its_holders_death_runs_again_once_the_lease_expires(gateway: object) -> None:
    from faregate.db.cluster_jobs import JobLease

    now = time.time()
    dead, alive = JobLease("cut", "dead", 30), JobLease("cut", "alive", 30)
    assert await dead.claim_run(600, now=now)  # ... and dies mid-run, never finishing it
    assert not await alive.claim_run(600, now=now + 29), "the lease is still good"
    assert await alive.claim_run(600, now=now + 31), "expired, and its run unfinished: run again at once"
    # a run that finished is not run again before its period
    done, later = JobLease("whole", "done", 30), JobLease("whole", "later", 30)
    assert await done.claim_run(600, now=now)
    assert await done.finish(now=now)
    assert not await later.claim_run(600, now=now + 31)
    assert (await later.read()) == LeaseState("later", now + 31 + 30, now, False, 2)
    assert await later.claim_run(600, now=now + 601)


async def test_a_stopping_worker_gives_its_leases_up(gateway: object) -> None:
    from faregate.db.cluster_jobs import ClusterJob, ClusterJobs, JobLease

    ran: list[str] = []

    async def run() -> None:
        ran.append("stopping")

    stopping = ClusterJobs("stopping", 30)
    stopping.add(ClusterJob("handover", lambda: 600.0, run))
    stopping.start()
    await wait_for(lambda: ran, "the job ran")
    await stopping.stop()
    other = JobLease("handover", "other", 30)
    assert not await other.claim_run(600), "taken over, its period not over"
    state = await other.read()
    assert state is not None and state.holder == "other"


async def test_a_holder_that_lost_its_lease_stops_the_run(gateway: object) -> None:
    from faregate.db.cluster_jobs import ClusterJob, ClusterJobs

    started, cancelled = asyncio.Event(), asyncio.Event()

    async def run() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    jobs = ClusterJobs("slow", 0.3)  # renews every 0.1 s
    tick = asyncio.ensure_future(jobs.tick(ClusterJob("lost", lambda: 600.0, run)))
    await started.wait()
    # another worker took the lease (this one failed to renew in time, say)
    await m.Option.filter(key=KEY_PREFIX + "lost").update(value=LeaseState("thief", time.time() + 30).text())
    assert await asyncio.wait_for(tick, PATIENCE) is True
    assert cancelled.is_set()
    state = await jobs.lease("lost").read()
    assert state is not None and state.holder == "thief"
