"""A/B of the gateway's CPU per request on a shared machine: two source trees of the gateway
(each ``faregate serve --workers 1``, SQLite, default settings) and the minimal relay, all
against one fake upstream, loaded in turn with short wrk runs, round after round, the order
rotated each round. Other jobs' load moves every server's figures alike within a round, so
the medians and the ratio to the minimal relay compare where one long run each would not.

    .venv/bin/python bench/ab.py --before /tmp/base --after . [--rounds 8] [--seconds 3]

A tree is a directory holding ``core/src`` and ``plugins/*/*/src`` (a checkout, or
``git archive REV core plugins | tar -x -C DIR``); its ``src`` dirs go first on the gateway's
``PYTHONPATH``. Environment variables (``FAREGATE_PLUGINS``, ``FAREGATE_LOG_LEVEL`` …) pass to
both gateways. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from run import (
    BENCH_DIR,
    MINIMAL_RELAY_KEY,
    PATH,
    PAUSE,
    Scenario,
    Servers,
    cpu_per_request,
    measure,
    run_wrk,
    setup_gateway,
    smoke_test,
    wait_ready,
)

from faregate.testing.harness import free_port


def python_path(tree: Path) -> str:
    dirs = [tree / "core" / "src", *sorted(tree.glob("plugins/*/*/src"))]
    missing = [d for d in dirs[:1] if not d.is_dir()]
    if missing:
        raise SystemExit(f"{tree}: no core/src")
    return os.pathsep.join(str(d) for d in dirs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="source tree A")
    parser.add_argument("--after", type=Path, required=True, help="source tree B")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3, help="seconds per wrk run")
    parser.add_argument("--concurrency", default="50,1")
    args = parser.parse_args(argv)
    levels = [int(c) for c in args.concurrency.split(",")]
    names = ("minimal-relay", "before", "after")
    figures: dict[tuple[str, bool, int], list[float]] = {}
    print(f"# A/B: {args.rounds} rounds of {args.seconds:g} s runs, loadavg {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="faregate-ab-") as tmp:
        workdir = Path(tmp)
        budget = args.rounds * len(names) * 2 * len(levels) * (args.seconds + PAUSE) + 300
        servers = Servers(workdir, budget=budget)
        try:
            ports = {name: free_port() for name in ("upstream", *names)}
            urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
            py = sys.executable
            servers.start("upstream", [py, "-m", "faregate_adapter_openai.testing.fake", "--host", "127.0.0.1",
                                       "--port", str(ports["upstream"])])
            servers.start("minimal-relay", [py, str(BENCH_DIR / "minimal_relay.py"), "--port",
                                            str(ports["minimal-relay"]), "--upstream", urls["upstream"],
                                            "--key", MINIMAL_RELAY_KEY])
            for name, tree in (("before", args.before), ("after", args.after)):
                data = workdir / name
                data.mkdir()
                servers.start(name, [py, "-m", "faregate.cli", "serve", "--host", "127.0.0.1", "--port",
                                     str(ports[name]), "--workers", "1"],
                              env={"FAREGATE_DATA_DIR": str(data), "PYTHONPATH": python_path(tree.resolve())})
            wait_ready(servers, "upstream", "GET", urls["upstream"] + "/v1/models")
            wait_ready(servers, "minimal-relay", "POST", urls["minimal-relay"] + PATH)
            keys = {"minimal-relay": MINIMAL_RELAY_KEY}
            for name in ("before", "after"):
                wait_ready(servers, name, "GET", urls[name] + "/api/status", timeout=180)
                keys[name] = asyncio.run(setup_gateway(urls[name], urls["upstream"]))
                smoke_test(urls[name], keys[name], name)
            for name in names:  # warm-up, not measured
                run_wrk(urls[name] + PATH, stream=False, concurrency=50, duration=2, key=keys[name])
            for n in range(args.rounds):
                order = names[n % 3:] + names[:n % 3]
                for stream in (False, True):
                    for c in levels:
                        for name in order:
                            s = Scenario(name, stream, c)
                            measure(servers, s, urls[name] + PATH, args.seconds, keys[name])
                            servers.check(name)
                            if s.errors:
                                raise RuntimeError(f"{s.label} c={c}: {s.errors} errors")
                            figures.setdefault((name, stream, c), []).append(cpu_per_request(s) * 1000)
                            time.sleep(PAUSE / 2)
                print(f"  round {n + 1} done, loadavg {os.getloadavg()[0]:.2f}", flush=True)
        finally:
            servers.stop()
    print("\nCPU per request, ms: median (min-max) over the rounds; ratio = median / minimal relay's median;"
          " in brackets the median of each round's own ratio (the servers of a round ran within seconds"
          " of each other, so a slow spell of the machine moves both)\n")
    print("| scenario | concurrency | minimal relay | before | after | before / relay | after / relay |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for stream in (False, True):
        for c in levels:
            cells, medians = [], {}
            for name in names:
                values = figures[(name, stream, c)]
                medians[name] = statistics.median(values)
                cells.append(f"{medians[name]:.3f} ({min(values):.3f}-{max(values):.3f})")
            relay = figures[("minimal-relay", stream, c)]
            ratios = [f"{medians[n] / medians['minimal-relay']:.2f}x "
                      f"[{statistics.median(v / r for v, r in zip(figures[(n, stream, c)], relay, strict=True)):.2f}x]"
                      for n in ("before", "after")]
            print(f"| {'streaming' if stream else 'regular'} | {c} | {' | '.join(cells)} | {' | '.join(ratios)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
