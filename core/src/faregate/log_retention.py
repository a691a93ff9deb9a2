"""Log retention: rows older than ``LogRetentionDays`` and beyond the newest
``LogRetentionMaxRows`` are deleted in short batches. Every worker of every node runs the
loop, but each round is claimed by one compare-and-set on a marker row in the shared
database, so the job runs once per deployment per interval, whatever the worker count."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tortoise.exceptions import IntegrityError

from faregate.db import models as m
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec

if TYPE_CHECKING:
    from faregate.state.options import Options

log = logging.getLogger("faregate")

#: the marker row (in the options table; not an option, never listed): the last run's time
CLAIM_KEY = "faregate:log_retention:last_run"
DELETE_BATCH = 1000

LOG_RETENTION_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("LogRetentionDays", "0", "Delete log rows older than this many days (0: keep).",
               specs.integer(0, 36_500)),
    OptionSpec("LogRetentionMaxRows", "0", "Keep at most this many log rows, the newest (0: no limit).",
               specs.integer(0, 10**12)),
)


async def claim_round(interval: float, now: float | None = None, key: str = CLAIM_KEY) -> bool:
    """True for exactly one caller per ``interval`` across the deployment (of the job whose
    marker row is ``key``)."""
    now = time.time() if now is None else now
    row = await m.Option.get_or_none(key=key)
    if row is None:
        try:
            await m.Option.create(key=key, value=str(int(now)))
            return True
        except IntegrityError:  # another worker made it first
            return False
    try:
        last = int(row.value)
    except ValueError:
        last = 0
    if now - last < interval:
        return False
    return bool(await m.Option.filter(key=key, value=row.value).update(value=str(int(now))))


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


async def retention_loop(options: Callable[[], Options], interval: float) -> None:
    interval = max(interval, 1.0)  # 0 would spin
    while True:
        await asyncio.sleep(interval)
        try:
            opts = options()
            days, max_rows = opts.value("LogRetentionDays"), opts.value("LogRetentionMaxRows")
            if (days or max_rows) and await claim_round(interval):
                deleted = await apply_retention(days, max_rows)
                if deleted:
                    log.info("log retention deleted %d rows", deleted)
        except Exception:
            log.exception("log retention failed")
