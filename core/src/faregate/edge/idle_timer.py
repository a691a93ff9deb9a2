"""Hypercorn's keep-alive timer, without a task per request. Hypercorn starts a task when a
connection falls idle (it waits out ``keep_alive_timeout``, or the server's shutdown, then
closes the connection) and cancels it, awaiting the cancellation, when the next request
arrives: on a busy keep-alive connection that is a task started, run, cancelled and
reaped for every request, though the connection is idle for well under a millisecond.

:class:`DeferredIdleTask` keeps Hypercorn's contract (``restart`` starts the action anew,
``stop`` ends it, one at a time under a lock; without a started task there is nothing to
await, and no lock is taken) but starts the action only once the
connection has stayed idle for :data:`START_DELAY`: until then a cancel of a timer handle
is all a new request costs. An idle connection so closes :data:`START_DELAY` later than
``keep_alive_timeout`` says, and at a graceful stop at most that much later too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import hypercorn.asyncio.tcp_server

#: seconds a connection is idle before its keep-alive task starts
START_DELAY = 0.25


class DeferredIdleTask:
    def __init__(self) -> None:
        self._task: asyncio.Task[Any] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._lock = asyncio.Lock()

    async def restart(self, task_group: Any, action: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        if self._task is None and not self._lock.locked():  # only a timer to replace: nothing to await
            self._cancel_timer()
            self._timer = asyncio.get_running_loop().call_later(START_DELAY, self._start, task_group, action)
            return
        async with self._lock:
            await self._end()
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(START_DELAY, self._start, task_group, action)

    async def stop(self) -> None:
        if self._task is None and not self._lock.locked():  # a busy connection's next request: the common case
            self._cancel_timer()
            return
        async with self._lock:
            await self._end()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _start(self, task_group: Any, action: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        self._timer = None
        keep_alive = action()
        try:
            self._task = task_group._task_group.create_task(keep_alive)  # where Hypercorn starts it
        except RuntimeError:  # the server is stopping: its task group takes no new task
            keep_alive.close()

    async def _end(self) -> None:
        self._cancel_timer()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass


def install() -> None:
    hypercorn.asyncio.tcp_server.AsyncioSingleTask = DeferredIdleTask  # type: ignore[attr-defined,assignment]  # the name TCPServer reads
