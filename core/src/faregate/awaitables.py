"""Calling what may or may not be a coroutine (a hook's result, a plugin object's method), and
bounding an await in time on the request path."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TypeVar

T = TypeVar("T")


async def await_me_maybe(value: T | Awaitable[T] | Callable[[], T | Awaitable[T]]) -> T:
    """Call ``value`` if callable, then await it if awaitable (datasette's convention)."""
    if callable(value):
        value = value()
    if inspect.isawaitable(value):
        value = await value
    return value


class time_limit:  # noqa: N801 - used like asyncio.timeout, a context manager
    """``asyncio.timeout(seconds)`` for the awaits of the request path, a plain ``with`` block:
    raises ``TimeoutError`` when the time runs out (the task is cancelled, as asyncio's does,
    and the cancel turned into the error); another cancel passes through. Its timer is one
    ``call_later`` handle: asyncio's (a state machine, rescheduling, an async context
    manager) cost about twice as much on every upstream call and stream read
    (docs/benchmarks.md)."""

    __slots__ = ("_seconds", "_task", "_cancelling", "_handle", "_expired")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds

    def __enter__(self) -> None:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("time_limit() is used within a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._expired = False
        self._handle = task.get_loop().call_later(self._seconds, self._expire)

    def _expire(self) -> None:
        self._expired = True
        self._task.cancel()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._handle.cancel()
        # the cancel was ours (and no one else's since): it becomes the timeout
        if self._expired and self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc


class idle_limit:  # noqa: N801 - used like time_limit
    """:class:`time_limit` ``(seconds)`` around each of many awaits of one task (a stream's
    reads, one per chunk), with one timer for them all: each ``with`` block only moves the
    deadline; the timer, when it fires early, re-arms itself for what is left of the current
    block's time, and does nothing between blocks (a slow client being sent a chunk is not
    the upstream's silence). A per-block ``time_limit`` made and cancelled a timer per chunk.
    :meth:`close` when done: the timer would keep the task referenced until it fires."""

    __slots__ = ("_seconds", "_task", "_loop", "_deadline", "_inside", "_cancelling", "_handle", "_expired")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._handle: asyncio.TimerHandle | None = None
        self._inside = self._expired = False

    def __enter__(self) -> None:
        handle = self._handle
        if handle is None:
            task = asyncio.current_task()
            if task is None:
                raise RuntimeError("idle_limit() is used within a task")
            self._task, self._loop = task, task.get_loop()
            self._deadline = self._loop.time() + self._seconds
            self._handle = self._loop.call_at(self._deadline, self._fire)
        else:
            self._deadline = self._loop.time() + self._seconds  # the timer fires earlier and re-arms
        self._cancelling = self._task.cancelling()
        self._inside = True

    def _fire(self) -> None:
        self._handle = None
        if not self._inside:
            return  # between blocks: the next block arms it again
        left = self._deadline - self._loop.time()
        if left > 0:
            self._handle = self._loop.call_at(self._deadline, self._fire)
            return
        self._expired = True
        self._task.cancel()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._inside = False
        if self._expired:
            self._expired = False
            # the cancel was ours (and no one else's since): it becomes the timeout
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
