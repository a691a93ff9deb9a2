"""Hypercorn's keep-alive timer as :class:`DeferredIdleTask` keeps it: a connection idle
for less than the start delay (a busy keep-alive connection between two requests) costs
no task; one idle for longer runs the keep-alive action, and a request stops it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import hypercorn.asyncio.tcp_server
import pytest
from hypercorn.asyncio.task_group import TaskGroup

from faregate.edge import idle_timer
from faregate.edge.idle_timer import DeferredIdleTask


async def test_a_short_idle_period_starts_no_task() -> None:
    started: list[str] = []

    async def action() -> None:
        started.append("keep-alive timer")

    async with TaskGroup(asyncio.get_running_loop()) as group:
        timer = DeferredIdleTask()
        before = len(asyncio.all_tasks())
        await timer.restart(group, action)
        assert len(asyncio.all_tasks()) == before  # Hypercorn's own starts one here
        await asyncio.sleep(0)
        await timer.stop()  # the next request came
        await asyncio.sleep(idle_timer.START_DELAY * 2)
    assert started == []


async def test_a_long_idle_period_runs_the_action_until_a_request_stops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idle_timer, "START_DELAY", 0.01)
    running, cancelled = asyncio.Event(), asyncio.Event()

    async def action() -> None:
        running.set()
        try:
            await asyncio.sleep(60)  # Hypercorn's waits out keep_alive_timeout, then closes
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async with TaskGroup(asyncio.get_running_loop()) as group:
        timer = DeferredIdleTask()
        await timer.restart(group, action)
        await asyncio.wait_for(running.wait(), 5)
        await timer.stop()
        assert cancelled.is_set()


async def test_a_timer_due_while_the_server_stops_leaves_no_coroutine_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idle_timer, "START_DELAY", 0)
    made: list[Coroutine[Any, Any, None]] = []

    async def action() -> None:
        pass

    def make() -> Coroutine[Any, Any, None]:
        made.append(action())
        return made[-1]

    class Stopping:  # Hypercorn's task group after its server began to stop
        class _task_group:  # noqa: N801 - the attribute Hypercorn's task group has
            @staticmethod
            def create_task(coro: object) -> None:
                raise RuntimeError("TaskGroup is shutting down")

    timer = DeferredIdleTask()
    await timer.restart(Stopping(), make)
    await asyncio.sleep(0.01)  # the timer fires
    assert len(made) == 1 and made[0].cr_frame is None  # closed: no "never awaited" warning
    await timer.stop()


def test_install_is_what_hypercorns_connections_use() -> None:
    idle_timer.install()
    assert hypercorn.asyncio.tcp_server.AsyncioSingleTask is DeferredIdleTask


async def test_a_busy_connection_takes_no_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Between two requests only a timer handle is replaced: no lock (two coroutine steps each)."""
    taken: list[str] = []

    class CountedLock(asyncio.Lock):
        async def acquire(self) -> bool:
            taken.append("lock")
            return await super().acquire()

    async def action() -> None:
        await asyncio.sleep(60)

    async with TaskGroup(asyncio.get_running_loop()) as group:
        timer = DeferredIdleTask()
        timer._lock = CountedLock()
        for _ in range(50):
            await timer.restart(group, action)  # the answer went out
            await timer.stop()  # the next request came
        assert taken == []
        monkeypatch.setattr(idle_timer, "START_DELAY", 0.001)
        await timer.restart(group, action)
        await asyncio.sleep(0.05)  # idle long enough: the keep-alive task runs
        await timer.stop()  # its cancel is awaited under the lock
        assert taken == ["lock"]
