"""The limits' counters and their three algorithms, in this process's memory (the Redis
store, :mod:`faregate.limits.redis_store`, runs the same ones in one Lua script).

- **GCRA** (the generic cell rate algorithm) for "``limit`` per ``window``": requests and
  tokens. One number per key, the *theoretical arrival time* ``tat``: each unit of cost moves
  it ``window / limit`` on; a cost is admitted while ``tat`` stays within ``window`` of now.
  That is a token bucket of ``limit`` that refills smoothly (a burst of ``limit``, then
  ``limit`` per window), which is new-api's own total-count limiter, and it takes a cost
  (tokens) and a correction (the tokens the answer really had) as cheaply as a request.
- **Sliding log** for new-api's successful-request count: at most ``limit`` successes in any
  ``window``, checked at admission and written when the answer succeeds (new-api's list of
  times; here at most ``limit`` of them are kept).
- **Leases** for concurrent requests: a request holds a lease (its id, with a deadline) from
  admission until its answer settles; a lease a dead worker never gave back lapses at its
  deadline, so a crash cannot keep a slot forever.

All the checks of one request are decided together: when one refuses, none counts."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

#: a check's kinds (also the Lua script's)
GCRA, LOG, LEASE = 1, 2, 3
#: a settlement's kinds
ADJUST, RECORD, RELEASE = 1, 2, 3


@dataclass(frozen=True, slots=True)
class Check:
    """One limit a request is admitted under: ``kind`` of :data:`GCRA`, :data:`LOG`
    (checked only; :data:`RECORD` writes it) or :data:`LEASE`; ``cost`` units (GCRA)."""

    key: str
    kind: int
    limit: int
    window_ms: int
    cost: int = 1


@dataclass(frozen=True, slots=True)
class Update:
    """What a settled answer changes: a GCRA key's cost by ``amount`` (:data:`ADJUST`, may
    be negative), a success written in a log (:data:`RECORD`), a lease given back (:data:`RELEASE`)."""

    key: str
    kind: int
    limit: int
    window_ms: int
    amount: int = 0
    member: str = ""


@dataclass(slots=True)
class Verdict:
    """``refused``: the index of the first check that refused (-1: admitted); ``wait_ms``
    until it would pass; per check, what was left before this request and the ms until it is whole."""

    refused: int = -1
    wait_ms: int = 0
    remaining: list[int] = field(default_factory=list)
    reset_ms: list[int] = field(default_factory=list)

    @property
    def admitted(self) -> bool:
        return self.refused < 0


class Store(Protocol):
    async def admit(self, checks: Sequence[Check], member: str) -> Verdict:
        """Decide ``checks`` together for the request ``member`` (its lease's name)."""
        ...

    async def settle(self, updates: Sequence[Update]) -> None: ...

    async def aclose(self) -> None: ...


def _ms() -> int:
    return time.monotonic_ns() // 1_000_000


class MemoryStore:
    """One process's limits: exact within it, not shared with other workers or nodes."""

    #: expired keys are swept when the table grows past this
    SWEEP_AT = 10_000

    def __init__(self, clock: Callable[[], int] = _ms) -> None:
        self.clock = clock
        self._tat: dict[str, float] = {}
        self._logs: dict[str, list[int]] = {}
        self._leases: dict[str, dict[str, int]] = {}
        self._sweep_at = self.SWEEP_AT

    async def admit(self, checks: Sequence[Check], member: str) -> Verdict:
        return self.decide(checks, member)

    def decide(self, checks: Sequence[Check], member: str) -> Verdict:
        now = self.clock()
        verdict = Verdict()
        news: list[float] = []
        for n, check in enumerate(checks):
            if check.kind == GCRA:
                step = check.window_ms / check.limit
                tat = max(self._tat.get(check.key, 0.0), now)
                new = tat + min(check.cost, check.limit) * step  # a cost over the limit waits for a full bucket
                news.append(new)
                over = new - now - check.window_ms
                # what is left before this request, and when the bucket is full again
                verdict.remaining.append(max(0, math.floor((check.window_ms - (tat - now)) / step)))
                verdict.reset_ms.append(max(0, math.ceil(tat - now)))
                wait = math.ceil(over)
            elif check.kind == LOG:
                log = self._live_log(check.key, now, check.window_ms)
                news.append(0.0)
                verdict.remaining.append(max(0, check.limit - len(log)))
                verdict.reset_ms.append(log[0] + check.window_ms - now if log else 0)
                wait = log[0] + check.window_ms - now if len(log) >= check.limit else 0
            else:
                leases = self._live_leases(check.key, now)
                news.append(0.0)
                verdict.remaining.append(max(0, check.limit - len(leases)))
                verdict.reset_ms.append(0)
                wait = 1000 if len(leases) >= check.limit else 0  # a slot frees when an answer ends
            if wait > 0 and verdict.admitted:
                verdict.refused, verdict.wait_ms = n, wait
        if not verdict.admitted:
            return verdict
        for check, new in zip(checks, news, strict=True):
            if check.kind == GCRA:
                self._tat[check.key] = new
            elif check.kind == LEASE:
                self._leases.setdefault(check.key, {})[member] = now + check.window_ms
        if len(self._tat) > self._sweep_at:
            self._sweep(now)
        return verdict

    async def settle(self, updates: Sequence[Update]) -> None:
        self.apply(updates)

    def apply(self, updates: Sequence[Update]) -> None:
        now = self.clock()
        for update in updates:
            if update.kind == ADJUST:
                step = update.window_ms / update.limit
                tat = self._tat.get(update.key, 0.0)
                # what the answer cost beyond its estimate is owed (the caller waits it out);
                # what it cost less is given back, never below now (no credit for idle time)
                if update.amount > 0:
                    self._tat[update.key] = max(tat, now) + update.amount * step
                else:
                    self._tat[update.key] = max(tat + update.amount * step, now)
            elif update.kind == RECORD:
                log = self._live_log(update.key, now, update.window_ms)
                log.append(now)
                del log[:-update.limit]
            else:
                self._leases.get(update.key, {}).pop(update.member, None)

    def _live_log(self, key: str, now: int, window_ms: int) -> list[int]:
        log = self._logs.setdefault(key, [])
        while log and log[0] <= now - window_ms:
            log.pop(0)
        return log

    def _live_leases(self, key: str, now: int) -> dict[str, int]:
        leases = self._leases.setdefault(key, {})
        for name in [m for m, deadline in leases.items() if deadline <= now]:
            del leases[name]
        return leases

    def _sweep(self, now: int) -> None:
        self._tat = {k: v for k, v in self._tat.items() if v > now}
        self._logs = {k: v for k, v in self._logs.items() if v}
        self._leases = {k: v for k, v in self._leases.items() if v}
        self._sweep_at = max(self.SWEEP_AT, 2 * len(self._tat))  # amortized

    async def aclose(self) -> None:
        self._tat.clear()
        self._logs.clear()
        self._leases.clear()
