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
