"""``faregate serve`` and ``faregate migrate``."""

from __future__ import annotations

import errno
import logging
import os
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from faregate.cli.runtime import export_flags, load_gateway, migrate_database, reach_database, run_async
from faregate.settings import SettingError

if TYPE_CHECKING:
    from hypercorn.config import Config, Sockets

    from faregate.gateway import Gateway

log = logging.getLogger("faregate")


def migrate_now(gateway: Gateway) -> None:
    run_async(migrate_database(gateway))


def bind(config: Config, settings: Any) -> Sockets:
    """The listening sockets, bound before anything else starts (and kept by the master
    while workers come and go): a port another process holds ends the start at once, in
    one line saying how to choose another, instead of after the app started."""
    try:
        return config.create_sockets()
    except OSError as exc:
        raise SettingError(_cannot_listen(settings.host, settings.port, exc)) from None


def _cannot_listen(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} on {host} is already in use; choose another with --port or FAREGATE_PORT"
    if exc.errno == errno.EACCES:
        return (f"cannot listen on {host}:{port}: permission denied (a port below 1024 needs root or "
                f"CAP_NET_BIND_SERVICE); choose another with --port or FAREGATE_PORT")
    if exc.errno == errno.EADDRNOTAVAIL or isinstance(exc, socket.gaierror):
        return (f"cannot listen on {host}:{port}: {host} is not an address of this machine "
                f"({exc.strerror or exc}); choose another with --host or FAREGATE_HOST")
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


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

    return lambda: run_async(sweep())


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
    from faregate.security.files import warn_if_open
    from faregate.settings import CORE_SETTINGS, Settings

    export_flags(flags)  # flags win over the environment, in this process and in its workers
    core = Settings(CORE_SETTINGS)
    logs.configure_from(core)  # before anything else can write a line
    config = Config()
    config.bind = [f"{core.host}:{core.port}"]
    config.keep_alive_timeout = 75
    config.graceful_timeout = 15
    # Hypercorn's lines go through our handlers (text or JSON, redacted), not its own
    config.errorlog = logging.getLogger("hypercorn.error")
    config.accesslog = logging.getLogger("hypercorn.access") if core.access_log else None
    sockets = bind(config, core)  # before the plugins and the gateway: a port in use is told in a moment
    try:
        gateway = load_gateway()
        settings = gateway.settings
        warn_if_open(settings.data_dir)  # said once here, not by every worker
        if settings.migrate and settings.node_type == "master":  # a slave, or FAREGATE_MIGRATE=0: a deploy step does
            migrate_now(gateway)
        else:
            run_async(reach_database(gateway))
    except BaseException:
        _close(sockets)
        raise
    os.environ["FAREGATE_MIGRATE"] = "0"  # done once here, not in every worker
    for sock in [*sockets.secure_sockets, *sockets.insecure_sockets]:
        sock.listen(config.backlog)  # from now on connections wait in the backlog until a worker serves
    log.info("Faregate listening on http://%s:%s (%d worker(s))", settings.host, settings.port, settings.workers)
    if settings.workers == 1:
        # one worker: serve in this process (no second interpreter start-up, no master).
        # If it dies the service manager restarts it; the new process returns the dead
        # one's leases at start (faregate.billing.workers).
        import uvloop
        from hypercorn.asyncio.run import worker_serve
        from hypercorn.utils import wrap_app

        from faregate.app import create_app

        app = wrap_app(create_app(gateway.plugins), config.wsgi_max_body_size, "asgi")
        uvloop.run(worker_serve(app, config, sockets=sockets))  # SIGTERM / SIGINT: a graceful stop
        return
    from faregate.supervisor import Supervisor

    sys.exit(Supervisor(config, settings.workers, _sweeper(gateway), sockets).run())


def _close(sockets: Sockets) -> None:
    for sock in [*sockets.secure_sockets, *sockets.insecure_sockets, *sockets.quic_sockets]:
        sock.close()


@click.command()
def migrate() -> None:
    """Apply database migrations and exit (whatever FAREGATE_MIGRATE and NODE_TYPE say)."""
    gateway = load_gateway()
    migrate_now(gateway)
    click.echo(f"database migrated ({gateway.backend.name})")
