"""Big request bodies cannot starve a worker's other clients (issue 26, P2): their CPU
work (the parse, the format's check and estimate) takes turns in the worker's big-body
lane, one body at a time, and the lane rests after each turn in proportion to it. The
latency this buys is measured by bench/big_bodies.py (docs/benchmarks.md); here the
mechanism is checked, with an injected clock, never a timing."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx

from faregate.exchange.big_bodies import MAX_REST, BigBodyLane
from faregate.testing.harness import AdminClient, GatewayServer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


async def test_the_lane_serves_one_body_at_a_time_and_rests_after_each() -> None:
    clock = FakeClock()
    lane = BigBodyLane(2.0, clock=clock, sleep=clock.sleep)
    order: list[str] = []
    first_inside = asyncio.Event()
    release_first = asyncio.Event()

    async def first() -> None:
        async with lane.turn():
            order.append("first in")
            first_inside.set()
            await release_first.wait()
            clock.now += 0.5  # its work took half a second
            order.append("first out")

    async def second() -> None:
        await first_inside.wait()
        async with lane.turn():
            order.append("second in")

    tasks = [asyncio.create_task(first()), asyncio.create_task(second())]
    await first_inside.wait()
    for _ in range(5):  # the second is queued behind the first, not beside it
        await asyncio.sleep(0)
    assert order == ["first in"] and lane.queued == 2
    release_first.set()
    await asyncio.gather(*tasks)
    assert order == ["first in", "first out", "second in"]
    assert clock.slept == [1.0]  # twice the first turn's 0.5 s, before the second began
    assert lane.queued == 0


async def test_a_rest_is_bounded_and_an_idle_lane_does_not_wait() -> None:
    clock = FakeClock()
    lane = BigBodyLane(2.0, clock=clock, sleep=clock.sleep)
    async with lane.turn():
        clock.now += 3600  # a paused machine: the next body still waits at most MAX_REST
    async with lane.turn():
        pass
    assert clock.slept == [MAX_REST]
    clock.now += 60  # long after the rest ended: no wait at all
    async with lane.turn():
        pass
    assert clock.slept == [MAX_REST]


async def test_a_turn_that_fails_still_frees_the_lane() -> None:
    clock = FakeClock()
    lane = BigBodyLane(0.0, clock=clock, sleep=clock.sleep)
    with contextlib.suppress(ValueError):
        async with lane.turn():
            raise ValueError("not JSON")
    async with asyncio.timeout(30):
        async with lane.turn():
            pass
    assert lane.queued == 0


class RecordingLane(BigBodyLane):
    """A lane that remembers how many turns ran, how many at once, and on which threads
    the work inside ran."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.turns = 0
        self.active = 0
        self.most_at_once = 0

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        async with super().turn():
            self.turns += 1
            self.active += 1
            self.most_at_once = max(self.most_at_once, self.active)
            try:
                await asyncio.sleep(0.01)  # give a second body every chance to overlap
                yield
            finally:
                self.active -= 1


async def test_concurrent_big_chat_bodies_take_turns_and_small_ones_never_queue(make_gateway: Any) -> None:
    gw: GatewayServer = await make_gateway(settings={"offload_body_kb": 16})
    lane = RecordingLane()
    gw.gateway.big_bodies = lane
    admin = AdminClient(gw.base_url)
    await admin.setup_root()
    key = await admin.add_token()
    await admin.close()
    # about 40 KB of many short messages each: over the 16 KB threshold
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(1000)]
    big = {"model": "no-channel-model", "messages": turns}
    small = {"model": "no-channel-model", "messages": [{"role": "user", "content": "hello"}]}
    async with httpx.AsyncClient(base_url=gw.base_url, headers={"Authorization": f"Bearer {key}"},
                                 timeout=60) as http:
        answers = await asyncio.gather(*(http.post("/v1/chat/completions", json=big) for _ in range(3)))
        # parsed and estimated (then refused: no channel serves the model)
        assert all(resp.status_code in (404, 503) for resp in answers), [r.text for r in answers]
        assert lane.turns == 6 and lane.most_at_once == 1  # a parse and an estimate for each, one at a time
        resp = await http.post("/v1/chat/completions", json=small)
        assert resp.status_code in (404, 503)
        assert lane.turns == 6  # a small body never enters the lane


async def test_the_estimate_of_a_big_body_runs_off_the_event_loop(make_gateway: Any) -> None:
    gw: GatewayServer = await make_gateway(settings={"offload_body_kb": 16})
    fmt = gw.gateway.formats["openai.chat"]
    loop_thread = threading.get_ident()
    threads: list[int] = []
    summarize = fmt.summarize

    def recording_summarize(body: Any, request: Any) -> Any:
        threads.append(threading.get_ident())
        return summarize(body, request)

    fmt.summarize = recording_summarize
    try:
        admin = AdminClient(gw.base_url)
        await admin.setup_root()
        key = await admin.add_token()
        await admin.close()
        turns = [{"role": "user", "content": f"turn {i}"} for i in range(1000)]
        async with httpx.AsyncClient(base_url=gw.base_url, headers={"Authorization": f"Bearer {key}"},
                                     timeout=60) as http:
            await http.post("/v1/chat/completions", json={"model": "no-channel-model", "messages": turns})
            await http.post("/v1/chat/completions", json={"model": "no-channel-model", "messages": turns[:1]})
    finally:
        del fmt.summarize  # back to the class's method
    assert len(threads) == 2 and threads[0] != loop_thread and threads[1] == loop_thread
