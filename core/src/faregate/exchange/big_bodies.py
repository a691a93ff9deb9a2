"""Big request bodies share a worker fairly.

Parsing and estimating a body of megabytes is CPU work that holds the GIL: orjson's parse
in one piece (a worker thread would not free the event loop), a format's estimate walking
every message in a worker thread (which still takes the GIL from the loop every few ms).
Three clients sending 9 MB bodies back to back kept a worker's loop busy nearly all the
time, and another client's p50 went from 11 to 128 ms (issue 26, P2).

So such work takes turns in a lane, one body at a time per worker, and after each turn
the lane rests for :data:`REST_RATIO` times as long as the turn took: however many big
bodies arrive, they get at most ``1 / (1 + REST_RATIO)`` of the worker, and small requests
the rest. A big body waits for its turn (FIFO); its own answer is not delayed by the rest
that follows it. Bodies up to ``FAREGATE_OFFLOAD_BODY_KB`` never enter the lane."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

#: the lane rests this many times as long as a turn took (2: big bodies get a third of the worker)
REST_RATIO = 2.0
#: a rest never exceeds this, whatever one turn cost (a machine paused for a minute)
MAX_REST = 5.0


class BigBodyLane:
    """One worker's lane for big-body CPU work; ``clock`` and ``sleep`` are injectable for tests."""

    def __init__(self, rest_ratio: float = REST_RATIO, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.rest_ratio = rest_ratio
        self._clock = clock
        self._sleep = sleep
        self._lock = asyncio.Lock()  # FIFO: big bodies are served in arrival order
        self._free_at = 0.0
        #: big bodies waiting for their turn or in it (for the metrics and tests)
        self.queued = 0

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """The block runs alone among big-body work, after the previous turn's rest."""
        self.queued += 1
        try:
            async with self._lock:
                rest = self._free_at - self._clock()
                if rest > 0:
                    await self._sleep(rest)
                start = self._clock()
                try:
                    yield
                finally:
                    end = self._clock()
                    self._free_at = end + min(MAX_REST, (end - start) * self.rest_ratio)
        finally:
            self.queued -= 1
