"""faregate.awaitables.time_limit: asyncio.timeout's behaviour, on one call_later handle."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from faregate.awaitables import idle_limit, time_limit


async def test_the_time_running_out_raises_timeout_error() -> None:
    never = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        with time_limit(0.01):
            await never
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]  # the cancel was taken back


async def test_an_await_done_in_time_is_untouched() -> None:
    with time_limit(5):
        await asyncio.sleep(0)
    await asyncio.sleep(0)  # no cancel left pending for a later await


@pytest.mark.parametrize("make", [time_limit, idle_limit], ids=["time_limit", "idle_limit"])
async def test_a_cancel_from_outside_passes_through(make: Callable[[float], Any]) -> None:
    started = asyncio.Event()
    limit = make(5)

    async def waiting() -> None:
        with limit:
            started.set()
            await asyncio.get_running_loop().create_future()

    task = asyncio.create_task(waiting())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    if isinstance(limit, idle_limit):
        limit.close()


async def test_a_zero_limit_expires_at_the_first_await() -> None:
    with pytest.raises(TimeoutError):
        with time_limit(0):
            await asyncio.sleep(1)


async def test_idle_limit_raises_when_one_await_outlasts_it() -> None:
    limit = idle_limit(0.05)
    for _ in range(3):  # quick awaits, each well inside the limit, longer than it together
        with limit:
            await asyncio.sleep(0.03)
    never = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError), limit:
        await never
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    limit.close()


async def test_idle_limit_counts_no_time_between_blocks() -> None:
    """A slow client being sent a chunk between two reads is not the upstream's silence."""
    limit = idle_limit(0.03)
    with limit:
        await asyncio.sleep(0)
    await asyncio.sleep(0.08)  # outside: the timer fires and does nothing
    with limit:
        await asyncio.sleep(0.01)  # a fresh limit for this await
    limit.close()
    await asyncio.sleep(0.05)  # closed: nothing fires at a later await


async def test_idle_limit_keeps_one_timer() -> None:
    loop = asyncio.get_running_loop()
    made: list[float] = []
    call_at = loop.call_at

    def counted(when: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
        made.append(when)
        return call_at(when, callback, *args)

    loop.call_at = counted  # type: ignore[method-assign]
    try:
        limit = idle_limit(5)
        for _ in range(100):
            with limit:
                await asyncio.sleep(0)
        limit.close()
    finally:
        del loop.call_at
    assert len(made) == 1
