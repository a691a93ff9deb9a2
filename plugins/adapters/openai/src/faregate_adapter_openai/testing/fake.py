"""The fake OpenAI server from the command line, for load benchmarks (``bench/run.py``)::

    python -m faregate_adapter_openai.testing.fake --port 9000 [--latency 0.0] [--api-key K] [--model M]

It prints ``listening on http://HOST:PORT`` once it accepts connections (``--port 0``
picks a free port) and runs until SIGINT / SIGTERM, on uvloop when installed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable

from faregate_adapter_openai.testing.server import FakeOpenAI

__all__ = ["FakeOpenAI", "main"]


async def _serve(args: argparse.Namespace) -> None:
    fake = FakeOpenAI(args.host, args.port, api_key=args.api_key, latency=args.latency, models=args.model,
                     validate_requests=False)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before the line: a stop right after it is a clean one
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await fake.start()
    print(f"listening on {fake.base_url}", flush=True)
    try:
        await stop.wait()
    finally:
        await fake.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m faregate_adapter_openai.testing.fake",
                                     description="Fake OpenAI Chat Completions server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to sleep before every answer")
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer <key>'")
    parser.add_argument("--model", action="append", default=[], help="extra model id for /v1/models")
    parser.add_argument("--no-uvloop", action="store_true", help="use the default asyncio event loop")
    args = parser.parse_args(argv)
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if not args.no_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            loop_factory = uvloop.new_event_loop
    with contextlib.suppress(KeyboardInterrupt), asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(_serve(args))


if __name__ == "__main__":
    main(sys.argv[1:])
