"""Background jobs that run once per cluster, however many nodes and workers poll.

Every worker of every node runs the loop of every job, but a job runs only in the worker
holding its lease: a row in the shared database (in the options table, key
``faregate:job:<name>``; not an option, never listed) naming the holder, when the lease
expires, when the job last started and whether it is running. Every change to the row is
one compare-and-set (an UPDATE whose WHERE is the value read), so two workers never both
take the lease or both start a run. The holder renews the lease every ``lease_seconds / 3``
(also while a run is under way); a worker that stops renewing (its process or node died,
its database connection broke) loses the lease when it expires, and the next worker to poll
takes it over, together with the job's schedule. A run cut short by its holder's death is
started again by the new holder at once rather than a period later.

The database, not Redis, holds the leases: every deployment has one (SQLite included, where
the workers of one host share it), and a job's lease then lives and dies with the data the
job works on. Expiry times are the workers' wall clocks: nodes need synchronised clocks
(NTP), as a clock ahead by more than a lease takes leases early."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from tortoise.exceptions import IntegrityError

from faregate import jsonutil
from faregate.db import models as m

log = logging.getLogger("faregate")

KEY_PREFIX = "faregate:job:"


@dataclass(frozen=True)
class LeaseState:
    holder: str
    expires: float
    #: when the job's last run started (0: never)
    last_run: float = 0.0
    #: a run is under way (or was, when its holder died)
    running: bool = False
    #: written with every change, so a renewal within the same clock tick still changes the row
    version: int = 0

    def text(self) -> str:
        return jsonutil.dumps(asdict(self)).decode()

    @classmethod
    def parse(cls, text: str) -> LeaseState:
        """The stored state; an unreadable row reads as an expired lease nobody holds."""
        try:
            raw = jsonutil.loads(text)
            return cls(holder=str(raw["holder"]), expires=float(raw["expires"]), last_run=float(raw["last_run"]),
                       running=bool(raw["running"]), version=int(raw["version"]))
        except (jsonutil.JSONDecodeError, KeyError, TypeError, ValueError):
            return cls(holder="", expires=0.0)


class JobLease:
    """One job's lease, seen from one worker (``holder``)."""

    def __init__(self, name: str, holder: str, lease_seconds: float) -> None:
        self.key = KEY_PREFIX + name
        self.holder = holder
        self.lease_seconds = lease_seconds

    async def read(self) -> LeaseState | None:
        row = await m.Option.get_or_none(key=self.key)
        return None if row is None else LeaseState.parse(row.value)

    async def _write(self, old_text: str | None, new: LeaseState) -> bool:
        """Compare-and-set: True when the row still read ``old_text`` (or did not exist)."""
        if old_text is None:
            try:
                await m.Option.create(key=self.key, value=new.text())
                return True
            except IntegrityError:  # another worker made it first
                return False
        return bool(await m.Option.filter(key=self.key, value=old_text).update(value=new.text()))

    async def claim_run(self, period: float, now: float | None = None) -> bool:
        """Take or renew the lease; True when this worker holds it and a run is due (more than
        ``period`` seconds after the last run started, or the last holder died mid-run), the
        run then being recorded as started. Call :meth:`finish` when it ends."""
        now = time.time() if now is None else now
        row = await m.Option.get_or_none(key=self.key)
        if row is None:
            return await self._write(None, LeaseState(self.holder, now + self.lease_seconds, now, True))
        state = LeaseState.parse(row.value)
        mine = state.holder == self.holder
        if not mine and state.expires > now:
            return False  # another worker holds it
        if mine and state.running:
            due = False  # a run of this worker's is under way
        else:
            due = (state.running and not mine) or now - state.last_run >= period
        new = LeaseState(self.holder, now + self.lease_seconds, now if due else state.last_run,
                         due or (state.running and mine), state.version + 1)
        if not await self._write(row.value, new):
            return False
        if not mine:
            log.info("cluster job %s: this worker (%s) took the lease over from %s", self.key[len(KEY_PREFIX):],
                     self.holder, state.holder or "nobody")
        return due

    async def renew(self, now: float | None = None, **changes: Any) -> bool:
        """Extend the lease this worker holds (with ``changes`` to the state); False when it
        holds it no longer."""
        now = time.time() if now is None else now
        row = await m.Option.get_or_none(key=self.key)
        if row is None:
            return False
        state = LeaseState.parse(row.value)
        if state.holder != self.holder:
            return False
        new = replace(state, expires=now + self.lease_seconds, version=state.version + 1, **changes)
        return await self._write(row.value, new)

    async def finish(self, now: float | None = None) -> bool:
        """The run ended: it is no longer under way."""
        return await self.renew(now, running=False)

    async def release(self) -> None:
        """Give the lease up now (at shutdown), so another worker takes it at its next poll."""
        row = await m.Option.get_or_none(key=self.key)
        if row is not None:
            state = LeaseState.parse(row.value)
            if state.holder == self.holder:
                await self._write(row.value, replace(state, expires=0.0, version=state.version + 1))


@dataclass(frozen=True)
class ClusterJob:
    name: str
    #: seconds between runs, read at every poll; None while the job is off
    period: Callable[[], float | None]
    run: Callable[[], Awaitable[object]]


class ClusterJobs:
    """This worker's loops over the cluster's jobs: each polls every ``lease_seconds / 3``."""

    def __init__(self, holder: str, lease_seconds: float) -> None:
        self.holder = holder
        self.lease_seconds = max(lease_seconds, 0.3)  # a shorter one would spin
        self.poll_seconds = self.lease_seconds / 3
        self.jobs: dict[str, ClusterJob] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def lease(self, name: str) -> JobLease:
        return JobLease(name, self.holder, self.lease_seconds)

    def add(self, job: ClusterJob) -> None:
        self.jobs[job.name] = job

    async def tick(self, job: ClusterJob, now: float | None = None) -> bool:
        """Run ``job`` if it is on, due, and this worker holds (or takes) its lease; True when
        it ran. The lease is renewed while the run lasts; a run whose lease is lost (its
        renewal failed, so another worker may take over) is cancelled."""
        period = job.period()
        if period is None:
            return False
        lease = self.lease(job.name)
        if not await lease.claim_run(period, now):
            return False
        run = asyncio.ensure_future(job.run())
        try:
            while True:
                done, _ = await asyncio.wait({run}, timeout=self.poll_seconds)
                if done:
                    break
                try:
                    held = await lease.renew()
                except Exception:
                    log.exception("cluster job %s: renewing the lease failed", job.name)
                    held = False
                if not held:
                    log.warning("cluster job %s: this worker lost the lease mid-run; stopping the run", job.name)
                    run.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await run
                    return True
            run.result()  # the run's own error, logged by the loop
        finally:
            if not run.done():  # this tick itself was cancelled (shutdown)
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run
            with contextlib.suppress(Exception):
                await lease.finish()
        return True

    async def loop(self, job: ClusterJob) -> None:
        while True:
            try:
                await self.tick(job)
            except Exception:
                log.exception("cluster job %s failed", job.name)
            await asyncio.sleep(self.poll_seconds)

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self.loop(job), name=f"cluster-job-{name}")
                       for name, job in self.jobs.items()]

    async def stop(self) -> None:
        """Stop the loops and give up the leases this worker holds."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        for name in self.jobs:
            with contextlib.suppress(Exception):
                await self.lease(name).release()
