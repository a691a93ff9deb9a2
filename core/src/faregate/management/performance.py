"""new-api's settings page "performance" tab (``/api/performance/…``, root). It reads
``GET /api/performance/stats`` and ``/api/performance/logs`` on every load; both were 404s and
an error toast. The answers carry this worker's real figures in new-api's shape, and say
plainly what Faregate does not have:

* memory: Go's runtime counters have no Python equivalent, so ``alloc`` is the resident set
  now, ``total_alloc`` its peak, ``sys`` the virtual size, ``num_gc`` the collector's runs
  (all generations) and ``num_goroutine`` the worker's asyncio tasks;
* the disk cache (new-api spools big bodies to disk) does not exist: its figures are zeros
  and ``config.disk_cache_enabled`` is false, as the ``performance_setting.*`` options say;
* log files: Faregate logs to standard error, so the listing is new-api's "no log
  directory" answer (``enabled: false``);
* disk space: the file system of ``data_dir``.

A figure is this worker's (a multi-worker server answers from whichever worker takes the
call). Clearing the disk cache or resetting its counters is refused by name; a forced
collection runs ``gc.collect()``."""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import shutil
from typing import Any

from quart import Blueprint, Response, request
from quart_schema import document_response

from faregate.db import models as m
from faregate.management.common import fail, gateway, ok, require
from faregate.management.openapi import Done, Ok
from faregate.principals import Principal

blueprint = Blueprint("performance", __name__)

NO_DISK_CACHE = "the disk cache is not available: Faregate keeps request bodies in memory"
#: new-api's own answer when it has no log directory (Faregate logs to standard error)
NO_LOG_DIR = "log directory not configured"
#: where Linux reports this process's memory; read per call, it is small
PROC_STATUS = "/proc/self/status"
#: Docker's and Podman's markers; fixed for the process's life, so read once
IN_CONTAINER = any(os.path.exists(p) for p in ("/.dockerenv", "/run/.containerenv"))


def _proc_memory() -> dict[str, int]:
    """VmRSS, VmHWM and VmSize in bytes from ``/proc/self/status``; empty off Linux."""
    found: dict[str, int] = {}
    try:
        with open(PROC_STATUS, encoding="ascii") as fh:
            for line in fh:
                name, _, rest = line.partition(":")
                parts = rest.split()
                if name in ("VmRSS", "VmHWM", "VmSize") and parts and parts[0].isdigit():
                    found[name] = int(parts[0]) * 1024  # the kernel counts kB
    except OSError:
        pass
    return found


def memory_stats() -> dict[str, int]:
    """The worker's memory in new-api's ``memory_stats`` shape (see the module's note)."""
    proc = _proc_memory()
    peak = proc.get("VmHWM", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    resident = proc.get("VmRSS", peak)
    return {"alloc": resident, "total_alloc": peak, "sys": proc.get("VmSize", resident),
            "num_gc": sum(int(s.get("collections", 0)) for s in gc.get_stats()),
            "num_goroutine": len(asyncio.all_tasks())}


def disk_space(path: str) -> dict[str, Any]:
    """The file system holding ``path``; zeros (which the page hides) when it cannot be read."""
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return {"total": 0, "free": 0, "used": 0, "used_percent": 0.0}
    percent = usage.used / usage.total * 100 if usage.total else 0.0
    return {"total": usage.total, "free": usage.free, "used": usage.used, "used_percent": round(percent, 2)}


def _number(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def _flag(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


@blueprint.get("/api/performance/stats")
@require(m.ROLE_ROOT)
@document_response(Ok[dict[str, Any]])
async def stats(me: Principal) -> Response:
    """This worker's memory, task count and data disk; the disk cache's zeros, flagged off."""
    gw = gateway()
    values = gw.snapshot.options.values

    def option(name: str) -> Any:
        return values[f"performance_setting.{name}"]

    cache = {k: 0 for k in ("active_disk_files", "current_disk_usage_bytes", "active_memory_buffers",
                            "current_memory_usage_bytes", "disk_cache_hits", "memory_cache_hits",
                            "disk_cache_max_bytes", "disk_cache_threshold_bytes")}
    return ok({
        "cache_stats": cache,
        "memory_stats": memory_stats(),
        "disk_cache_info": {"path": "", "exists": False, "file_count": 0, "total_size": 0},
        "disk_space_info": disk_space(str(gw.settings.data_dir)),
        "config": {
            "disk_cache_enabled": _flag(option("disk_cache_enabled")),
            "disk_cache_threshold_mb": _number(option("disk_cache_threshold_mb")),
            "disk_cache_max_size_mb": _number(option("disk_cache_max_size_mb")),
            "disk_cache_path": str(option("disk_cache_path")),
            "is_running_in_container": IN_CONTAINER,
            "monitor_enabled": _flag(option("monitor_enabled")),
            "monitor_cpu_threshold": _number(option("monitor_cpu_threshold")),
            "monitor_memory_threshold": _number(option("monitor_memory_threshold")),
            "monitor_disk_threshold": _number(option("monitor_disk_threshold")),
        },
    })


@blueprint.get("/api/performance/logs")
@require(m.ROLE_ROOT)
@document_response(Ok[dict[str, Any]])
async def log_files(me: Principal) -> Response:
    """No log directory: Faregate logs to standard error (new-api's ``enabled: false`` answer)."""
    return ok({"log_dir": "", "enabled": False, "file_count": 0, "total_size": 0, "files": None})


@blueprint.delete("/api/performance/logs")
@require(m.ROLE_ROOT)
@document_response(Ok[None])
async def cleanup_log_files(me: Principal) -> Response:
    """new-api checks the mode and count first, then answers that there is no log directory."""
    if request.args.get("mode") not in ("by_count", "by_days"):
        return fail("invalid mode, must be by_count or by_days")
    value = request.args.get("value", "")
    if not value.isdigit() or int(value) < 1:
        return fail("invalid value, must be a positive integer")
    return fail(NO_LOG_DIR)


@blueprint.post("/api/performance/gc")
@require(m.ROLE_ROOT)
@document_response(Done)
async def force_gc(me: Principal) -> Response:
    """A full collection in this worker: the honest counterpart of Go's ``runtime.GC``."""
    gc.collect()
    return ok(message="GC 已执行")


@document_response(Ok[None])
async def _no_disk_cache(me: Principal) -> Response:
    return fail(NO_DISK_CACHE)


for _method, _path in (("DELETE", "/api/performance/disk_cache"), ("POST", "/api/performance/reset_stats")):
    blueprint.add_url_rule(_path, f"refused_{_path.rsplit('/', 1)[1]}", require(m.ROLE_ROOT)(_no_disk_cache),
                           methods=[_method])
