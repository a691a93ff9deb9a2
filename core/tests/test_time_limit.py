"""faregate.awaitables.time_limit: asyncio.timeout's behaviour, on one call_later handle."""

from __future__ import annotations

import asyncio

import pytest

from faregate.awaitables import time_limit


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


async def test_a_cancel_from_outside_passes_through() -> None:
    started = asyncio.Event()

    async def waiting() -> None:
        with time_limit(5):
            started.set()
            await asyncio.get_running_loop().create_future()

    task = asyncio.create_task(waiting())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_zero_limit_expires_at_the_first_await() -> None:
    with pytest.raises(TimeoutError):
        with time_limit(0):
            await asyncio.sleep(1)
