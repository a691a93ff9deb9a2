"""Faregate at scale (issue 29, items 6-8): three modes, everything on loopback.

``snapshot``  a gateway holding 10,000 channels (one per key line, as new-api's batch mode
              makes them), 100,000 API keys and 10,000 users against a gateway with one
              channel and one key: start-up time, memory (RSS), relay CPU per request under
              wrk (both gateways measured in turns, ``--rounds`` times), and the time to apply one
              channel's or key's change (in this process, on the same database, against a whole
              reload), plus one channel edit through the API.
``streams``   1,000 concurrent slow streams through one worker: how many complete, and the
              worker's peak RSS (against a budget, 300 MB by default).
``workers``   requests/s of two workers against one (wrk, concurrency 50).

    .venv/bin/python bench/scale.py snapshot [--channels 10000 --keys 100000 --users 10000] [--duration 10]
                                             [--rounds 3]
    .venv/bin/python bench/scale.py streams [--streams 1000 --hold 20 --budget-mb 300]
    .venv/bin/python bench/scale.py workers [--duration 10]

The database is filled with bulk inserts through the ORM (not one API call per row), into
the SQLite file of a gateway that made and migrated it and was stopped. Needs wrk
(``apt-get install -y wrk``). See docs/benchmarks.md ("Flat at scale").
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from faregate.testing.harness import AdminClient, free_port

BENCH_DIR = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("faregate_bench_run", BENCH_DIR / "run.py")
assert _spec is not None and _spec.loader is not None
bench_run = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # dataclasses look it up
_spec.loader.exec_module(bench_run)
Scenario, Servers, measure, run_wrk = bench_run.Scenario, bench_run.Servers, bench_run.measure, bench_run.run_wrk
MODEL, PATH = bench_run.MODEL, bench_run.PATH


def now() -> str:
    return f"loadavg {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


class Bench:
    """The servers of one run, in a temp dir: the fake upstream and gateways by name."""

    def __init__(self, workdir: Path, budget: float) -> None:
        self.workdir = workdir
        self.servers = Servers(workdir, budget)
        self.urls: dict[str, str] = {}

    def upstream(self) -> str:
        port = free_port()
        self.servers.start("upstream", [sys.executable, "-m", "faregate_adapter_openai.testing.fake",
                                        "--host", "127.0.0.1", "--port", str(port)])
        self.urls["upstream"] = f"http://127.0.0.1:{port}"
        bench_run.wait_ready(self.servers, "upstream", "GET", self.urls["upstream"] + "/v1/models")
        return self.urls["upstream"]

    def gateway(self, name: str, data_dir: Path, workers: int = 1, timeout: float = 300) -> float:
        """Start ``faregate serve`` on ``data_dir``; the seconds until it answers."""
        data_dir.mkdir(exist_ok=True)
        port = free_port()
        started = time.monotonic()
        self.servers.start(name, [sys.executable, "-m", "faregate.cli", "serve", "--host", "127.0.0.1",
                                  "--port", str(port), "--workers", str(workers)],
                           env={"FAREGATE_DATA_DIR": str(data_dir)})
        self.urls[name] = f"http://127.0.0.1:{port}"
        bench_run.wait_ready(self.servers, name, "GET", self.urls[name] + "/api/status", timeout=timeout)
        return time.monotonic() - started

    def stop(self, name: str) -> None:
        proc = self.servers.procs.pop(name)
        single = Servers(self.workdir, 0)
        single.procs[name] = proc
        single.stop()

    def serving_pids(self, name: str) -> list[int]:
        pids = [p for p in self.servers.tree(name)[1:] if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
        return pids or [self.servers.worker_pid(name) or 0]

    def rss(self, name: str) -> tuple[float, float]:
        """(RSS, peak RSS) in MB of the serving processes of ``name`` (summed over workers)."""
        pids = self.serving_pids(name)
        return sum(rss_mb(p) for p in pids), sum(rss_mb(p, "VmHWM") for p in pids)

    def reset_peak(self, name: str) -> bool:
        """Start the kernel's peak RSS (VmHWM) afresh, so it measures what follows, not start-up."""
        try:
            for pid in self.serving_pids(name):
                Path(f"/proc/{pid}/clear_refs").write_text("5")
        except OSError:
            return False
        return True


async def setup(base_url: str, upstream_url: str, **channel: Any) -> str:
    admin = AdminClient(base_url)
    try:
        await admin.setup_root()
        await admin.add_channel(base_url=upstream_url, models=MODEL, name="fake-upstream", **channel)
        return await admin.add_token(name="bench", remain_quota=10**12, unlimited=True)
    finally:
        await admin.close()


def check(base_url: str, key: str) -> None:
    resp = httpx.post(base_url + PATH, json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
                      headers={"Authorization": f"Bearer {key}"}, timeout=30)
    if resp.status_code != 200:
        raise RuntimeError(f"gateway answered {resp.status_code}: {resp.text[:500]}")


def cpu_run(bench: Bench, name: str, key: str, duration: float, concurrency: int = 50) -> Any:
    url = bench.urls[name] + PATH
    run_wrk(url, stream=False, concurrency=concurrency, duration=2, key=key)  # warm-up, not measured
    time.sleep(1)
    scenario = Scenario(name, False, concurrency)
    measure(bench.servers, scenario, url, duration, key)
    ms = 1000 * scenario.cpu["server"] / scenario.rps
    print(f"  {name:<14} c={concurrency} {scenario.rps:8,.0f} req/s  p50 {scenario.result['p50_us'] / 1000:.2f} ms"
          f"  errors {scenario.errors}  CPU/request {ms:.3f} ms  server {scenario.cpu['server']:.2f}"
          f"  other {scenario.cpu['other']:.2f} cores  ({now()})", flush=True)
    return scenario


# ---- snapshot: 10,000 channels, 100,000 keys, 10,000 users ---------------------------------

async def populate(data_dir: Path, upstream_url: str, channels: int, keys: int, users: int) -> dict[str, float]:
    """Bulk-insert the rows, then time the snapshot's loads in this process on them."""
    from faregate.db import models as m
    from faregate.db.storage import close_storage, default_url, open_storage, tortoise_config
    from faregate.default_plugins.options import CORE_REGISTRY, GatewayOptions
    from faregate.security.crypto import SecretBox, key_hash, load_or_create_secret, mask_key
    from faregate.state.snapshot import Snapshot
    from faregate.testing.conformance import installed_storage_backends

    box = SecretBox(load_or_create_secret(str(data_dir), "crypto.secret"))  # the gateway's
    await open_storage(tortoise_config(default_url(str(data_dir)), installed_storage_backends())[1])
    figures: dict[str, float] = {}
    try:
        started = time.monotonic()
        first_user = (await m.User.all().order_by("-id").first().values_list("id", flat=True) or 0) + 1
        first_channel = (await m.Channel.all().order_by("-id").first().values_list("id", flat=True) or 0) + 1
        first_token = (await m.Token.all().order_by("-id").first().values_list("id", flat=True) or 0) + 1
        user_ids = list(range(first_user, first_user + users))
        await m.User.bulk_create([m.User(id=i, username=f"bench-{i}", quota=10**9) for i in user_ids],
                                 batch_size=1000)
        channel_ids = list(range(first_channel, first_channel + channels))
        await m.Channel.bulk_create([
            m.Channel(id=i, type=1, name=f"batch-{i}", key_enc=box.encrypt(f"sk-upstream-{i}", f"channel:{i}"),
                      base_url=upstream_url, models=MODEL, group="default", status=m.CHANNEL_ENABLED)
            for i in channel_ids], batch_size=1000)
        await m.Ability.bulk_create([m.Ability(group="default", model=MODEL, channel_id=i, enabled=True)
                                     for i in channel_ids], batch_size=1000)
        rows = []
        for n, i in enumerate(range(first_token, first_token + keys)):
            key = os.urandom(24).hex()
            rows.append(m.Token(id=i, user_id=user_ids[n % len(user_ids)] if user_ids else 1, key_hash=key_hash(key),
                                key_enc=box.encrypt(key, f"token:{i}"), key_mask=mask_key(key), name=f"k{i}",
                                unlimited_quota=True))
        await m.Token.bulk_create(rows, batch_size=1000)
        figures["populate_s"] = time.monotonic() - started

        snap = Snapshot(box, CORE_REGISTRY, GatewayOptions)
        figures["load_all_s"] = await timed(snap.load_all)
        figures["rebuild_routes_ms"] = 1000 * await timed(snap.rebuild_routes)
        one = channel_ids[len(channel_ids) // 2]
        token = first_token + keys // 2
        changes = []
        for n in range(20):
            await m.Channel.filter(id=one).update(weight=n)
            changes.append(await timed(lambda: snap.load_channel(one)))
        figures["load_channel_ms"] = 1000 * statistics.median(changes)
        changes = []
        for n in range(20):
            await m.Token.filter(id=token).update(name=f"renamed-{n}")
            changes.append(await timed(lambda: snap.load_token(token)))
        figures["load_token_ms"] = 1000 * statistics.median(changes)
    finally:
        await close_storage()
    return figures


async def timed(step: Callable[[], Awaitable[None]]) -> float:
    started = time.monotonic()
    await step()
    return time.monotonic() - started


async def edit_channel(base_url: str, channel_id: int, n: int = 10) -> float:
    """Median seconds of one channel edit through the API (write, publish, apply)."""
    admin = AdminClient(base_url)
    try:
        await admin.setup_root()  # set up already: logs in
        times = []
        for i in range(n):
            started = time.monotonic()
            await admin.ok("PUT", "/api/channel/", json={"id": channel_id, "weight": i})
            times.append(time.monotonic() - started)
        return statistics.median(times)
    finally:
        await admin.close()


def snapshot_mode(args: argparse.Namespace, bench: Bench) -> dict[str, Any]:
    upstream = bench.upstream()
    labels = {"gw-one": "one channel, one key", "gw-big": f"{args.channels:,} channels, {args.keys:,} keys"}
    out: dict[str, dict[str, Any]] = {}
    keys: dict[str, str] = {}
    for name, label in labels.items():
        data_dir = bench.workdir / name
        bench.gateway(name, data_dir)
        keys[name] = asyncio.run(setup(bench.urls[name], upstream))
        bench.stop(name)
        figures: dict[str, Any] = {}
        if name == "gw-big":
            figures = asyncio.run(populate(data_dir, upstream, args.channels, args.keys, args.users))
            print(f"  populated in {figures['populate_s']:.1f} s; in-process snapshot: load_all "
                  f"{figures['load_all_s']:.2f} s, whole routing index {figures['rebuild_routes_ms']:.1f} ms, "
                  f"one channel's change {figures['load_channel_ms']:.2f} ms, "
                  f"one key's {figures['load_token_ms']:.2f} ms", flush=True)
        figures["start_s"] = bench.gateway(name, data_dir)  # migrated already: the start of a running install
        # CPU seconds of the whole process tree to get there: what a busy machine stretches least
        figures["start_cpu_s"] = bench.servers.cpu_ticks()[name] / os.sysconf("SC_CLK_TCK")
        figures["rss_start_mb"] = bench.rss(name)[0]
        check(bench.urls[name], keys[name])
        print(f"  {label}: started in {figures['start_s']:.1f} s ({figures['start_cpu_s']:.1f} s of CPU), "
              f"RSS {figures['rss_start_mb']:.0f} MB", flush=True)
        out[name] = figures
    # both run throughout, measured in turns: a machine whose load drifts weighs on both alike
    for _ in range(args.rounds):
        for name in labels:
            scenario = cpu_run(bench, name, keys[name], args.duration)
            out[name].setdefault("cpu_ms_per_request", []).append(1000 * scenario.cpu["server"] / scenario.rps)
            out[name].setdefault("rps", []).append(scenario.rps)
            out[name].setdefault("other_cores", []).append(scenario.cpu["other"])
    for name, label in labels.items():
        figures = out[name]
        figures["rss_after_mb"] = bench.rss(name)[0]
        figures["api_channel_edit_ms"] = 1000 * asyncio.run(edit_channel(bench.urls[name], 1))
        figures["cpu_ms_median"] = statistics.median(figures["cpu_ms_per_request"])
        print(f"  {label}: CPU/request median {figures['cpu_ms_median']:.3f} ms of "
              f"{', '.join(f'{v:.3f}' for v in figures['cpu_ms_per_request'])}; RSS {figures['rss_after_mb']:.0f} MB "
              f"after load; one channel edit through the API {figures['api_channel_edit_ms']:.1f} ms", flush=True)
    ratio = out["gw-big"]["cpu_ms_median"] / out["gw-one"]["cpu_ms_median"]
    print(f"\nCPU/request at scale / one channel: {ratio:.2f} (target <= 1.10: {'PASS' if ratio <= 1.1 else 'FAIL'}; "
          f"{now()})")
    return {**out, "ratio": ratio}


# ---- streams: 1,000 slow streams on one worker ---------------------------------------------

async def hold_streams(url: str, key: str, count: int, hold: float, sample: Callable[[], None]) -> tuple[int, float]:
    """``count`` streaming requests at once; how many ended with ``[DONE]``, and the seconds
    until the last ended. ``sample`` runs every 0.2 s meanwhile."""
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    timeout = aiohttp.ClientTimeout(total=hold + 120)
    done = 0

    async def one(session: aiohttp.ClientSession) -> None:
        nonlocal done
        try:
            async with session.post(url, json=body, headers={"Authorization": f"Bearer {key}"}) as resp:
                text = await resp.text()
                if resp.status == 200 and "[DONE]" in text:
                    done += 1
        except (TimeoutError, aiohttp.ClientError):
            pass

    async def sampler() -> None:
        while True:
            sample()
            await asyncio.sleep(0.2)

    started = time.monotonic()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
        watch = asyncio.create_task(sampler())
        await asyncio.gather(*(one(session) for _ in range(count)))
        watch.cancel()
    return done, time.monotonic() - started


def streams_mode(args: argparse.Namespace, bench: Bench) -> dict[str, Any]:
    upstream = bench.upstream()
    data_dir = bench.workdir / "gw"
    bench.gateway("gw", data_dir)
    # every upstream answer streams its first chunk, then stalls ``hold`` seconds, then the rest:
    # the fake's own fault headers, sent by the channel's header override
    stall = {"x-fake-fault": "stall", "x-fake-after-chunks": "1", "x-fake-delay": str(args.hold)}
    key = asyncio.run(setup(bench.urls["gw"], upstream, header_override=json.dumps(stall)))
    rss_start = bench.rss("gw")[0]
    peak = [rss_start]
    exact_peak = bench.reset_peak("gw")  # else the sampled peak (every 0.2 s)

    def sample() -> None:
        peak[0] = max(peak[0], bench.rss("gw")[0])

    print(f"  {args.streams} streams, each held {args.hold:g} s upstream ({now()})", flush=True)
    done, seconds = asyncio.run(hold_streams(bench.urls["gw"] + PATH, key, args.streams, args.hold, sample))
    rss_now, hwm = bench.rss("gw")
    peak_mb = max(peak[0], hwm) if exact_peak else peak[0]
    ok = done == args.streams and peak_mb <= args.budget_mb
    print(f"\n{done}/{args.streams} streams completed in {seconds:.1f} s; worker RSS {rss_start:.0f} MB before, "
          f"peak {peak_mb:.0f} MB, {rss_now:.0f} MB after ({now()})")
    print(f"budget: all complete, peak <= {args.budget_mb:g} MB -> {'PASS' if ok else 'FAIL'}")
    return {"completed": done, "streams": args.streams, "seconds": seconds, "rss_start_mb": rss_start,
            "rss_peak_mb": peak_mb, "rss_after_mb": rss_now}


# ---- workers: two against one --------------------------------------------------------------

def workers_mode(args: argparse.Namespace, bench: Bench) -> dict[str, Any]:
    upstream = bench.upstream()
    data_dir = bench.workdir / "gw"
    bench.gateway("gw-1", data_dir)
    key = asyncio.run(setup(bench.urls["gw-1"], upstream))
    out: dict[str, Any] = {}
    for workers in (1, 2):
        name = f"gw-{workers}"
        if workers > 1:
            bench.gateway(name, data_dir, workers=workers)
        check(bench.urls[name], key)
        scenario = cpu_run(bench, name, key, args.duration)
        out[name] = {"rps": scenario.rps, "cpu_ms_per_request": 1000 * scenario.cpu["server"] / scenario.rps,
                     "server_cores": scenario.cpu["server"], "other_cores": scenario.cpu["other"],
                     "errors": scenario.errors}
        bench.stop(name)
    ratio = out["gw-2"]["rps"] / out["gw-1"]["rps"]
    print(f"\ntwo workers / one: {ratio:.2f}x requests/s (target >= 1.7 on a quiet 2-core machine; {now()})")
    out["ratio"] = ratio
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Faregate at scale (see docs/benchmarks.md)")
    parser.add_argument("mode", choices=("snapshot", "streams", "workers"))
    parser.add_argument("--channels", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--duration", type=float, default=10, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="snapshot: wrk runs per gateway, taken in turns")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--hold", type=float, default=20, help="seconds each slow stream stalls upstream")
    parser.add_argument("--budget-mb", type=float, default=300)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    print(f"# bench/scale.py {args.mode} ({now()})", flush=True)
    with tempfile.TemporaryDirectory(prefix="faregate-scale-") as tmp:
        bench = Bench(Path(tmp), budget=3600)
        try:
            out = {"snapshot": snapshot_mode, "streams": streams_mode, "workers": workers_mode}[args.mode](args, bench)
        except Exception:
            for name in bench.servers.procs:
                print(f"--- {name} log (tail) ---\n{bench.servers.log(name)}", file=sys.stderr)
            raise
        finally:
            bench.servers.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
