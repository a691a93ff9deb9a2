"""``faregate serve``: migrate once, then serve with Hypercorn (uvloop workers)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.security import redact
from faregate.settings import SettingError

if TYPE_CHECKING:
    from faregate.gateway import Gateway


def _migrate(*, forced: bool = False) -> Gateway:
    from faregate.db import storage
    from faregate.gateway import Gateway
    from faregate.plugins import load_plugins

    gateway = Gateway(load_plugins())
    if forced or gateway.settings.migrate:  # FAREGATE_MIGRATE=0: a deploy step migrates instead
        asyncio.run(storage.migrate(gateway.db_config))
    return gateway


def _sweeper(gateway: Gateway) -> Callable[[], None]:
    """For the supervisor: return the leases of workers whose process is gone, in a
    short-lived connection of the master's own (it serves nothing)."""
    from faregate.billing.workers import sweep_dead_workers
    from faregate.db import storage

    async def sweep() -> None:
        await storage.open_storage(gateway.db_config)
        try:
            await sweep_dead_workers(stale_after=gateway.settings.sweep_interval * 3)
        finally:
            await storage.close_storage()

    return lambda: asyncio.run(sweep())


def serve(host: str, port: int, workers: int, access_log: bool) -> None:
    from hypercorn.config import Config

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    redact.install()
    gateway = _migrate()
    os.environ["FAREGATE_MIGRATE"] = "0"  # done once here, not in every worker
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.keep_alive_timeout = 75
    config.graceful_timeout = 15
    if access_log:
        config.accesslog = "-"
    config.errorlog = "-"
    logging.getLogger("faregate").info("Faregate listening on http://%s:%s (%d worker(s))", host, port, workers)
    if workers == 1:
        # one worker: serve in this process (no second interpreter start-up, no master).
        # If it dies the service manager restarts it; the new process returns the dead
        # one's leases at start (faregate.billing.workers).
        import uvloop
        from hypercorn.asyncio import serve as serve_app

        from faregate.app import create_app

        uvloop.run(serve_app(create_app(), config))
        return
    from faregate.supervisor import Supervisor

    sys.exit(Supervisor(config, workers, _sweeper(gateway)).run())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="faregate", description="Faregate LLM API gateway")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="run the gateway")
    p_serve.add_argument("--host", default="127.0.0.1")
    p_serve.add_argument("--port", type=int, default=3000)
    p_serve.add_argument("--workers", type=int, default=1)
    p_serve.add_argument("--access-log", action="store_true")
    sub.add_parser("migrate", help="apply database migrations and exit")
    args = parser.parse_args(argv)
    try:
        if args.command == "serve":
            serve(args.host, args.port, args.workers, args.access_log)
        elif args.command == "migrate":
            _migrate(forced=True)
    except SettingError as err:  # a bad FAREGATE_* value: one line, no traceback
        print(f"faregate: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
