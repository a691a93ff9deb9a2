"""``faregate serve --workers N`` (N > 1): a master process that binds the listening
socket once and keeps N worker processes serving it.

Hypercorn's own multi-worker ``run`` stops everything when one worker exits. Here:

* the socket belongs to the master, so the port stays open while a worker is replaced
  (the kernel queues new connections for the workers still accepting);
* a worker that exits while the master is running is started again at once, then with
  a growing delay (0.5 s doubling to 30 s) while replacements keep dying young, so a
  crash loop does not spin; if no worker has ever stayed up and they keep dying, the
  master gives up (exit 1: a broken deployment fails visibly);
* right after a worker dies, its quota leases go back to the balances (the sweeper sees
  its process is gone: :mod:`faregate.billing.workers`);
* SIGTERM / SIGINT stop the workers gracefully (each settles and returns its leases);
  one that does not stop within the grace period is killed and its leases returned;
* a worker whose master disappeared (kill -9) stops by itself instead of serving on
  unsupervised;
* the workers' Prometheus metrics go to files in one directory (``PROMETHEUS_MULTIPROC_DIR``:
  the operator's, emptied at start, or a fresh one removed at exit), so ``GET /metrics``
  on any worker sums them all; a worker that exits has its live gauges dropped
  (:mod:`faregate.observe.metrics`, docs/metrics.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event as EventType
from types import FrameType
from typing import Any

from hypercorn.config import Config, Sockets

log = logging.getLogger("faregate.supervisor")

HEALTHY_AFTER = 10.0  # a worker that lived this long did not die of a bad start
MAX_DELAY = 30.0
GIVE_UP_AFTER = 5  # early deaths per worker slot, while none has ever been healthy
#: prometheus_client's switch to multiprocess mode, read when a worker first imports it
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


@dataclass(slots=True)
class _Slot:
    process: BaseProcess | None = None
    started: float = 0.0
    early_deaths: int = 0  # in a row
    restart_at: float = 0.0


def restart_delay(early_deaths: int) -> float:
    """0 for a first death (replace at once), then 0.5 s doubling up to MAX_DELAY."""
    if early_deaths <= 1:
        return 0.0
    return float(min(MAX_DELAY, 0.5 * 2 ** (early_deaths - 2)))


def prepare_metrics_dir() -> tuple[str, bool]:
    """The directory of the workers' metric files, set in the environment the workers
    inherit (before they import prometheus_client): the operator's
    ``PROMETHEUS_MULTIPROC_DIR`` with the files of earlier runs removed, or a fresh
    private one. True when made here (removed at exit)."""
    path = os.environ.get(METRICS_DIR_ENV)
    if path:
        os.makedirs(path, exist_ok=True)
        for name in os.listdir(path):
            if name.endswith(".db"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(path, name))
        return path, False
    path = tempfile.mkdtemp(prefix="faregate-metrics-")
    os.environ[METRICS_DIR_ENV] = path
    return path, True


def metrics_process_dead(path: str, pid: int | None) -> None:
    """Drop the live gauges of a worker that exited (its counters stay in the sums)."""
    if pid is None:
        return
    try:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
    except Exception:  # metrics must never stop the master
        log.exception("dropping the metrics of worker pid %s failed", pid)


class Supervisor:
    def __init__(self, config: Config, workers: int, sweep: Callable[[], None], sockets: Sockets | None = None) -> None:
        self.config = config
        #: bound by the caller (``faregate serve`` binds before anything else), or here
        self.sockets = sockets
        self.slots = [_Slot() for _ in range(workers)]
        self.sweep = sweep  # returns the leases of workers whose process is gone
        self.ctx = get_context("spawn")
        self.shutdown: EventType = self.ctx.Event()
        self.stopping = False
        self.ever_healthy = False
        self.metrics_dir = ""

    def run(self) -> int:
        sockets = self.sockets or self.config.create_sockets()
        self.metrics_dir, own_metrics_dir = prepare_metrics_dir()  # before the first worker starts
        # wakes the wait below on a signal (PEP 475 would otherwise resume it)
        wake_r, wake_w = socket.socketpair()
        wake_w.setblocking(False)
        old_wakeup = signal.set_wakeup_fd(wake_w.fileno())
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)
        try:
            return self._loop(sockets, wake_r)
        finally:
            signal.set_wakeup_fd(old_wakeup)
            for sock in [*sockets.secure_sockets, *sockets.insecure_sockets]:
                sock.close()
            wake_r.close()
            wake_w.close()
            if own_metrics_dir:
                shutil.rmtree(self.metrics_dir, ignore_errors=True)
                os.environ.pop(METRICS_DIR_ENV, None)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self.stopping:
            log.info("received %s: stopping the workers", signal.Signals(signum).name)
        self.stopping = True
        self.shutdown.set()

    def _start(self, slot: _Slot, sockets: Sockets) -> None:
        process = self.ctx.Process(target=worker_main, args=(self.config, sockets, self.shutdown, os.getpid()),
                                   name="faregate-worker")
        process.start()
        slot.process, slot.started = process, time.monotonic()
        log.info("started worker pid %s", process.pid)

    def _loop(self, sockets: Sockets, wake: socket.socket) -> int:
        for slot in self.slots:
            self._start(slot, sockets)
        while not self.stopping:
            now = time.monotonic()
            pending = [s.restart_at for s in self.slots if s.process is None]
            timeout = max(0.0, min(pending) - now) if pending else None
            sentinels: list[Any] = [s.process.sentinel for s in self.slots if s.process is not None]
            ready = wait([*sentinels, wake], timeout)
            if wake in ready:
                with contextlib.suppress(BlockingIOError):
                    wake.recv(512)
            if self.stopping:
                break
            died = self._reap()
            for slot in self.slots:
                if slot.process is None and slot.restart_at <= time.monotonic():
                    self._start(slot, sockets)
            if died:
                self._sweep()
            if not self.ever_healthy and all(s.early_deaths >= GIVE_UP_AFTER for s in self.slots):
                log.error("every worker keeps dying at start; giving up")
                self.stopping = True
                self.shutdown.set()
                self._stop()
                return 1
        self._stop()
        return 0

    def _reap(self) -> bool:
        """Collect exited workers and schedule their replacement; True if any died."""
        died = False
        now = time.monotonic()
        for slot in self.slots:
            process = slot.process
            if process is None:
                continue
            lived = now - slot.started
            if lived >= HEALTHY_AFTER:
                self.ever_healthy = True
                slot.early_deaths = 0
            if process.exitcode is None:
                continue
            process.join()
            metrics_process_dead(self.metrics_dir, process.pid)
            died = True
            slot.process = None
            slot.early_deaths = slot.early_deaths + 1 if lived < HEALTHY_AFTER else 1
            delay = restart_delay(slot.early_deaths)
            slot.restart_at = now + delay
            log.error("worker pid %s exited (code %s) after %.1f s; replacing it%s", process.pid,
                      process.exitcode, lived, f" in {delay:.1f} s" if delay else "")
        return died

    def _sweep(self) -> None:
        try:
            self.sweep()
        except Exception:  # the heartbeat sweep in the workers is the safety net
            log.exception("returning the leases of a dead worker failed")

    def _stop(self) -> None:
        """Graceful stop: workers see the event, finish, settle and return their leases."""
        deadline = time.monotonic() + float(self.config.graceful_timeout) + 10.0
        killed = False
        for slot in self.slots:
            if slot.process is None:
                continue
            slot.process.join(max(0.0, deadline - time.monotonic()))
            if slot.process.exitcode is None:
                log.error("worker pid %s did not stop in time; killing it", slot.process.pid)
                slot.process.kill()
                slot.process.join()
                killed = True
            metrics_process_dead(self.metrics_dir, slot.process.pid)
        if killed:
            self._sweep()


# ---- the worker process ---------------------------------------------------------------


def worker_main(config: Config, sockets: Sockets, shutdown: EventType, master_pid: int) -> None:
    """One worker: the app served by Hypercorn (uvloop) on the master's sockets."""
    import uvloop
    from hypercorn.asyncio.run import worker_serve
    from hypercorn.utils import wrap_app

    from faregate.app import create_app
    from faregate.observe import logs
    from faregate.settings import CORE_SETTINGS, Settings

    core = Settings(CORE_SETTINGS)  # the master validated them and passed its flags on in the environment
    logs.configure_from(core)
    app = wrap_app(create_app(), config.wsgi_max_body_size, "asgi")

    async def until_shutdown() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        # a signal to the worker itself (systemd signals the whole control group) is a graceful stop too
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        while not (stop.is_set() or shutdown.is_set()):
            if os.getppid() != master_pid:
                log.error("the master process is gone; stopping")
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.2):
                    await stop.wait()

    uvloop.run(worker_serve(app, config, sockets=sockets, shutdown_trigger=until_shutdown))
