"""``faregate serve`` and ``faregate migrate``."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from faregate.cli.runtime import export_flags, load_gateway

if TYPE_CHECKING:
    from faregate.gateway import Gateway

log = logging.getLogger("faregate")


def migrate_now(gateway: Gateway) -> None:
    from faregate.db import storage

    asyncio.run(storage.migrate(gateway.db_config, gateway.backend.migration_lock(gateway.db_url)))


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


@click.command()
@click.option("--host", help="Address to listen on [FAREGATE_HOST].")
@click.option("--port", type=click.IntRange(1, 65535), help="Port [FAREGATE_PORT, PORT].")
@click.option("--workers", type=click.IntRange(1, 512), help="Worker processes [FAREGATE_WORKERS].")
@click.option("--access-log/--no-access-log", default=None, help="Log every HTTP request [FAREGATE_ACCESS_LOG].")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error", "critical"],
                                                case_sensitive=False), help="[FAREGATE_LOG_LEVEL]")
@click.option("--log-format", type=click.Choice(["text", "json"], case_sensitive=False),
              help="[FAREGATE_LOG_FORMAT]")
def serve(**flags: Any) -> None:
    """Apply migrations (on a master node), then serve the gateway with Hypercorn."""
    from hypercorn.config import Config

    from faregate.observe import logs
    from faregate.settings import CORE_SETTINGS, Settings

    export_flags(flags)  # flags win over the environment, in this process and in its workers
    core = Settings(CORE_SETTINGS)
    logs.configure_from(core)  # before anything else can write a line
    gateway = load_gateway()
    settings = gateway.settings
    if settings.migrate and settings.node_type == "master":  # a slave, or FAREGATE_MIGRATE=0: a deploy step does
        migrate_now(gateway)
    os.environ["FAREGATE_MIGRATE"] = "0"  # done once here, not in every worker
    config = Config()
    config.bind = [f"{settings.host}:{settings.port}"]
    config.keep_alive_timeout = 75
    config.graceful_timeout = 15
    # Hypercorn's lines go through our handlers (text or JSON, redacted), not its own
    config.errorlog = logging.getLogger("hypercorn.error")
    config.accesslog = logging.getLogger("hypercorn.access") if settings.access_log else None
    log.info("Faregate listening on http://%s:%s (%d worker(s))", settings.host, settings.port, settings.workers)
    if settings.workers == 1:
        # one worker: serve in this process (no second interpreter start-up, no master).
        # If it dies the service manager restarts it; the new process returns the dead
        # one's leases at start (faregate.billing.workers).
        import uvloop
        from hypercorn.asyncio import serve as serve_app

        from faregate.app import create_app

        uvloop.run(serve_app(create_app(gateway.plugins), config))
        return
    from faregate.supervisor import Supervisor

    sys.exit(Supervisor(config, settings.workers, _sweeper(gateway)).run())


@click.command()
def migrate() -> None:
    """Apply database migrations and exit (whatever FAREGATE_MIGRATE and NODE_TYPE say)."""
    gateway = load_gateway()
    migrate_now(gateway)
    click.echo(f"database migrated ({gateway.backend.name})")
