"""Log retention: rows older than ``LogRetentionDays`` and beyond the newest
``LogRetentionMaxRows`` are deleted in short batches. Every worker of every node runs the
loop, but only the holder of the job's lease runs a round (:mod:`faregate.db.cluster_jobs`),
so the job runs once per deployment per interval, whatever the worker count."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.db import models as m
from faregate.db.cluster_jobs import ClusterJob
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec

if TYPE_CHECKING:
    from faregate.state.options import Options

log = logging.getLogger("faregate")

DELETE_BATCH = 1000

LOG_RETENTION_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("LogRetentionDays", "0", "Delete log rows older than this many days (0: keep).",
               specs.integer(0, 36_500)),
    OptionSpec("LogRetentionMaxRows", "0", "Keep at most this many log rows, the newest (0: no limit).",
               specs.integer(0, 10**12)),
)


async def _delete_where_id_at_most(threshold: int) -> int:
    deleted = 0
    while True:
        ids = [r.id for r in await m.Log.filter(id__lte=threshold).order_by("id").limit(DELETE_BATCH).only("id")]
        if not ids:
            return deleted
        deleted += await m.Log.filter(id__in=ids).delete()
        await asyncio.sleep(0)  # let requests through between batches


async def apply_retention(days: int, max_rows: int, now: float | None = None) -> int:
    """Delete what the retention options say must go; the number of rows deleted."""
    now = time.time() if now is None else now
    deleted = 0
    if days > 0:
        # by time, not id: the created_at index finds it at once, where a walk down the ids
        # would first read every newer row (ids and times rise together, up to batching)
        newest_old = await m.Log.filter(created_at__lt=int(now - days * 86400)).order_by("-created_at", "-id").first()
        if newest_old is not None:
            deleted += await _delete_where_id_at_most(newest_old.id)
    if max_rows > 0:
        cutoff = await m.Log.all().order_by("-id").offset(max_rows).first()
        if cutoff is not None:
            deleted += await _delete_where_id_at_most(cutoff.id)
    return deleted


def retention_job(options: Callable[[], Options], interval: float) -> ClusterJob:
    """The retention round as a cluster job: every ``interval`` seconds while either option is set."""

    def period() -> float | None:
        opts = options()
        return max(interval, 1.0) if opts.value("LogRetentionDays") or opts.value("LogRetentionMaxRows") else None

    async def run() -> None:
        opts = options()
        deleted = await apply_retention(opts.value("LogRetentionDays"), opts.value("LogRetentionMaxRows"))
        if deleted:
            log.info("log retention deleted %d rows", deleted)

    return ClusterJob("log_retention", period, run)
