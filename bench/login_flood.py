"""Relay latency while the management API is flooded with wrong passwords (issue 8, #13).

Starts the fake OpenAI upstream and the gateway (``faregate serve --workers 1``, SQLite
in a fresh temp dir) as subprocesses, sets up root, a channel and a key, then measures
the relay's p50 / p99 at a small steady concurrency in three phases:

* ``quiet``: relays only;
* ``flood, throttle off``: the same while ``--flooders`` clients post wrong passwords
  for root as fast as they are answered, with the login throttle disabled, so every
  one of them runs argon2 (the worst case for the event loop);
* ``flood, default throttle``: the same flood with the default throttle (it answers 429
  after 10 failures, so argon2 mostly stops running).

    .venv/bin/python bench/login_flood.py [--seconds 8] [--relays 4] [--flooders 8]

The two flood phases run on gateways started with different settings; see
docs/benchmarks.md for the recorded figures.
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

from faregate.testing.harness import AdminClient, GatewayProcess

MODEL = "gpt-4o-mini"
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}


async def relay_loop(http: httpx.AsyncClient, key: str, until: float, latencies: list[float]) -> None:
    while time.perf_counter() < until:
        start = time.perf_counter()
        resp = await http.post("/v1/chat/completions", json=CHAT, headers={"Authorization": f"Bearer {key}"})
        resp.raise_for_status()
        latencies.append((time.perf_counter() - start) * 1000)


async def flood_loop(http: httpx.AsyncClient, until: float, answers: Counter[int]) -> None:
    i = 0
    while time.perf_counter() < until:
        i += 1
        resp = await http.post("/api/user/login", json={"username": "root", "password": f"wrong-{i}"})
        answers[resp.status_code] += 1


async def phase(base_url: str, key: str, args: argparse.Namespace, flood: bool) -> tuple[list[float], Counter[int]]:
    latencies: list[float] = []
    answers: Counter[int] = Counter()
    limits = httpx.Limits(max_connections=args.relays + args.flooders)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as http:
        until = time.perf_counter() + args.seconds
        tasks = [relay_loop(http, key, until, latencies) for _ in range(args.relays)]
        if flood:
            tasks += [flood_loop(http, until, answers) for _ in range(args.flooders)]
        await asyncio.gather(*tasks)
    return latencies, answers


async def gateway_phases(upstream: str, env: dict[str, str], args: argparse.Namespace,
                         phases: list[tuple[str, bool]]) -> list[tuple[str, list[float], Counter[int]]]:
    with tempfile.TemporaryDirectory() as data_dir:
        gateway = GatewayProcess(data_dir, env=env)
        await asyncio.to_thread(gateway.start)
        try:
            admin = AdminClient(gateway.base_url)
            await admin.setup_root()
            await admin.add_channel(base_url=upstream, models=MODEL)
            key = await admin.add_token(unlimited=True)
            await admin.close()
            results = []
            for name, flood in phases:
                latencies, answers = await phase(gateway.base_url, key, args, flood)
                results.append((name, latencies, answers))
            return results
        finally:
            gateway.stop()


def report(name: str, latencies: list[float], answers: Counter[int], seconds: float) -> None:
    cuts = statistics.quantiles(latencies, n=100)
    logins = ", ".join(f"{count} × {status}" for status, count in sorted(answers.items())) or "none"
    print(f"{name:<26} relay p50 {cuts[49]:6.1f} ms  p99 {cuts[98]:6.1f} ms  "
          f"({len(latencies) / seconds:5.0f} relays/s)  logins: {logins}")


async def main(args: argparse.Namespace) -> None:
    upstream = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "faregate_adapter_openai.testing.fake", "--host", "127.0.0.1", "--port", "0",
        "--model", MODEL, stdout=asyncio.subprocess.PIPE)
    try:
        assert upstream.stdout is not None
        line = (await asyncio.wait_for(upstream.stdout.readline(), 30)).decode()
        url = line.removeprefix("listening on ").strip()  # it prints its address once it accepts
        off = {"FAREGATE_LOGIN_MAX_FAILURES_PER_ACCOUNT": "0", "FAREGATE_LOGIN_MAX_FAILURES_PER_IP": "0"}
        results = await gateway_phases(url, off, args, [("quiet", False), ("flood, throttle off", True)])
        results += await gateway_phases(url, {}, args, [("flood, default throttle", True)])
        for name, latencies, answers in results:
            report(name, latencies, answers, args.seconds)
    finally:
        upstream.terminate()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(upstream.wait(), 10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each phase")
    parser.add_argument("--relays", type=int, default=4, help="concurrent relay clients")
    parser.add_argument("--flooders", type=int, default=8, help="concurrent login flooders")
    asyncio.run(main(parser.parse_args()))
