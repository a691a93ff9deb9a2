"""Another client's relay latency while big bodies arrive (issue 26, P2).

Starts the fake OpenAI upstream and the gateway (``faregate serve``, one worker, SQLite
in a fresh temp dir) as subprocesses, sets up root, a channel and a key, then measures
one small client's chat latency (p50 / p99, one request at a time) in two phases:

* ``idle``: the small client alone;
* ``big bodies``: the same while ``--senders`` clients each post a chat body of
  ``--messages`` short messages (about 8.8 MB for 200,000) as fast as they are answered.

    .venv/bin/python bench/big_bodies.py [--seconds 10] [--senders 3] [--messages 200000]

The load clients share the machine with the gateway (and, here, two vCPUs): a figure is
only comparable with another taken on the same machine. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections import Counter

import httpx
import orjson

from faregate.testing.harness import AdminClient, GatewayProcess

MODEL = "gpt-4o-mini"
SMALL = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}


def big_body(messages: int) -> bytes:
    """``messages`` alternating user / assistant turns of a few words each."""
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i:06d}"}
             for i in range(messages)]
    return orjson.dumps({"model": MODEL, "messages": turns})


async def small_loop(http: httpx.AsyncClient, key: str, until: float, latencies: list[float]) -> None:
    while time.perf_counter() < until:
        start = time.perf_counter()
        resp = await http.post("/v1/chat/completions", json=SMALL, headers={"Authorization": f"Bearer {key}"})
        resp.raise_for_status()
        latencies.append((time.perf_counter() - start) * 1000)


async def big_loop(http: httpx.AsyncClient, key: str, body: bytes, until: float, answers: Counter[int]) -> None:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    while time.perf_counter() < until:
        resp = await http.post("/v1/chat/completions", content=body, headers=headers)
        answers[resp.status_code] += 1


async def phase(base_url: str, key: str, body: bytes | None, args: argparse.Namespace
                ) -> tuple[list[float], Counter[int]]:
    latencies: list[float] = []
    answers: Counter[int] = Counter()
    async with httpx.AsyncClient(base_url=base_url, timeout=300) as small, \
            httpx.AsyncClient(base_url=base_url, timeout=300) as big:
        until = time.perf_counter() + args.seconds
        tasks = [small_loop(small, key, until, latencies)]
        if body is not None:
            tasks += [big_loop(big, key, body, until, answers) for _ in range(args.senders)]
        await asyncio.gather(*tasks)
    return latencies, answers


def report(name: str, latencies: list[float], answers: Counter[int]) -> None:
    cuts = statistics.quantiles(latencies, n=100)
    bigs = ", ".join(f"{count} × {status}" for status, count in sorted(answers.items())) or "none"
    print(f"{name:<12} small p50 {cuts[49]:7.1f} ms  p99 {cuts[98]:7.1f} ms  ({len(latencies)} requests)  "
          f"big bodies answered: {bigs}")


async def main(args: argparse.Namespace) -> None:
    body = big_body(args.messages)
    print(f"big body: {len(body) / 1e6:.1f} MB, {args.messages} messages; {args.senders} sender(s)")
    upstream = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "faregate_adapter_openai.testing.fake", "--host", "127.0.0.1", "--port", "0",
        "--model", MODEL, stdout=asyncio.subprocess.PIPE)
    try:
        assert upstream.stdout is not None
        line = (await asyncio.wait_for(upstream.stdout.readline(), 30)).decode()
        url = line.removeprefix("listening on ").strip()
        with tempfile.TemporaryDirectory() as data_dir:
            gateway = GatewayProcess(data_dir)
            await asyncio.to_thread(gateway.start)
            try:
                admin = AdminClient(gateway.base_url)
                await admin.setup_root()
                await admin.add_channel(base_url=url, models=MODEL)
                key = await admin.add_token(unlimited=True)
                await admin.close()
                await phase(gateway.base_url, key, None, argparse.Namespace(**{**vars(args), "seconds": 1.0}))
                report("idle", *await phase(gateway.base_url, key, None, args))
                report("big bodies", *await phase(gateway.base_url, key, body, args))
            finally:
                gateway.stop()
    finally:
        upstream.terminate()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(upstream.wait(), 10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--senders", type=int, default=3, help="concurrent clients posting big bodies")
    parser.add_argument("--messages", type=int, default=200_000, help="messages in each big body")
    asyncio.run(main(parser.parse_args()))
