"""Keeps every worker's snapshot current.

A management write appends a row to ``change_events`` and then signals the other
workers: through a shared epoch counter in a memory-mapped file (workers on this
host; the relay checks it per request, a memory read) and, when Redis is configured,
through Redis pub/sub (workers on other hosts). A signalled worker reads the events
past the last id it applied and reloads just those rows. A periodic check of the
newest event id is the safety net for a lost signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import mmap
import os
import struct
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from tortoise.functions import Max

from faregate.db import models as m
from faregate.db.dsn import sqlite_file
from faregate.security.files import private_dir
from faregate.state.snapshot import Snapshot

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("faregate.changefeed")

REDIS_CHANNEL = "faregate:changes"
EPOCH_FILE = "faregate.epoch"
_EPOCH = struct.Struct("<Q")


def epoch_path(data_dir: str, db_url: str) -> str:
    """Where the processes sharing this database bump and read the epoch: beside a SQLite
    database (every process using that file is on this host, whatever its data directory: a
    ``faregate import`` run elsewhere is heard at once), else in the data directory (other hosts
    hear through Redis). The default database lives in the data directory: the same file."""
    if db_url[:9].lower() == "sqlite://":
        path = sqlite_file(db_url)
        if path and path != ":memory:":
            return os.path.join(os.path.dirname(os.path.abspath(path)), EPOCH_FILE)
    return os.path.join(data_dir, EPOCH_FILE)


class EpochFile:
    """An 8-byte counter shared by the workers of one host."""

    def __init__(self, path: str) -> None:
        private_dir(os.path.dirname(path) or ".")
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        if os.fstat(self._fd).st_size < _EPOCH.size:
            os.ftruncate(self._fd, _EPOCH.size)
        self._map = mmap.mmap(self._fd, _EPOCH.size)

    def read(self) -> int:
        value: int = _EPOCH.unpack_from(self._map, 0)[0]
        return value

    def bump(self) -> int:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            value = self.read() + 1
            _EPOCH.pack_into(self._map, 0, value)
            return value
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._map.close()
            os.close(self._fd)


class ChangeFeed:
    def __init__(self, snapshot: Snapshot[Any], epoch_path: str, redis_url: str = "",
                 sync_interval: float = 30.0) -> None:
        self.snapshot = snapshot
        self.epoch = EpochFile(epoch_path)
        self.seen_epoch = self.epoch.read()
        self.last_id = 0
        self.redis_url = redis_url
        self.sync_interval = sync_interval
        self._redis: Redis | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._pull_lock = asyncio.Lock()
        self._pending: asyncio.Task[Any] | None = None
        #: when this worker last read the feed from the database successfully (monotonic)
        self.synced_at = 0.0
        #: kinds that are not rows of the snapshot, each handled by a callable told the ref id
        #: (the login throttle's ``login_unlock``, which ``faregate admin unlock`` announces)
        self.signals: dict[str, Callable[[int], Awaitable[None]]] = {}

    async def start(self) -> None:
        self.last_id = await self._max_id()
        await self.snapshot.load_all()
        self.synced_at = time.monotonic()
        self._tasks.append(asyncio.create_task(self._poll_loop(), name="changefeed-poll"))
        if self.redis_url:
            import redis.asyncio as aioredis

            self._redis = aioredis.from_url(self.redis_url)
            self._tasks.append(asyncio.create_task(self._redis_loop(self._redis), name="changefeed-redis"))

    def current(self) -> bool:
        """Whether this worker's view is kept current: its poll loop runs and its last
        database sync is recent (two sync intervals, plus slack for a slow query)."""
        alive = bool(self._tasks) and not self._tasks[0].done()
        return alive and time.monotonic() - self.synced_at <= 2 * self.sync_interval + 5

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._redis is not None:
            with contextlib.suppress(Exception):
                await self._redis.aclose()
        self.epoch.close()

    # -- writers ---------------------------------------------------------------------
    async def publish(self, kind: str, ref_id: int = 0) -> None:
        """Record a change, signal every other worker, and apply it here at once."""
        await self.publish_many(kind, (ref_id,))

    async def publish_many(self, kind: str, ref_ids: Iterable[int]) -> None:
        """Record changes of many rows of one kind (a bulk edit of channels): one insert, one
        signal and one pull for them all, so the other workers reload them together."""
        now = int(time.time())
        events = [m.ChangeEvent(kind=kind, ref_id=ref_id, created_at=now) for ref_id in ref_ids]
        if not events:
            return
        await m.ChangeEvent.bulk_create(events, batch_size=500)
        # bump before pulling: the pull then also covers any bump another worker made meanwhile
        self.seen_epoch = self.epoch.bump()
        await self.pull()
        if self._redis is not None:
            try:
                await self._redis.publish(REDIS_CHANNEL, b"1")
            except Exception:  # the poll loop still picks the change up
                log.warning("redis publish failed; other hosts will catch up by polling")

    # -- readers ---------------------------------------------------------------------
    def check(self) -> asyncio.Task[Any] | None:
        """Per request: a memory read. Returns a task to await when another worker on
        this host changed something since we last looked."""
        epoch = self.epoch.read()
        if epoch != self.seen_epoch:
            self.seen_epoch = epoch
            # pulls are serialised by _pull_lock, so one already past its query cannot miss this
            self._pending = asyncio.ensure_future(self.pull())
        pending = self._pending
        if pending is not None and not pending.done():
            return pending  # every request waits while a pull is in flight, not just the first
        return None

    async def catch_up(self) -> None:
        """Apply what other workers changed since we last looked, if anything."""
        pending = self.check()
        if pending is not None:
            await pending

    async def pull(self) -> None:
        async with self._pull_lock:
            events = await m.ChangeEvent.filter(id__gt=self.last_id).order_by("id")
            if not events:
                return
            kinds: set[tuple[str, int]] = set()
            for event in events:
                kinds.add((event.kind, event.ref_id))
                self.last_id = event.id
            await self._apply(kinds)

    async def _apply(self, changes: set[tuple[str, int]]) -> None:
        snap = self.snapshot
        if any(kind == "all" for kind, _ in changes):
            await snap.load_all()
            return
        channels: list[int] = []
        for kind, ref in changes:
            if kind == "token":
                await snap.load_token(ref)
            elif kind == "user":
                await snap.load_user(ref)
            elif kind == "option":
                await snap.load_options()
            elif kind == "channel":
                channels.append(ref)
            elif kind in self.signals:
                try:
                    await self.signals[kind](ref)
                except Exception:  # the rows' changes above still apply
                    log.exception("change feed signal %s failed", kind)
        if channels:  # together: a route many of them share is recomputed once
            await snap.load_channels(channels)

    async def _max_id(self) -> int:
        row = await m.ChangeEvent.annotate(top=Max("id")).first().values("top")
        return int((row or {}).get("top") or 0)

    async def _poll_loop(self) -> None:
        # Idle workers see same-host changes within 0.5 s, other hosts without Redis
        # within ``sync_interval``.
        last_sync = time.monotonic()
        while True:
            await asyncio.sleep(0.5)
            try:
                await self.catch_up()
                if time.monotonic() - last_sync >= self.sync_interval:
                    last_sync = time.monotonic()
                    if await self._max_id() != self.last_id:
                        await self.pull()
                    self.synced_at = time.monotonic()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("change feed poll failed")

    async def _redis_loop(self, redis: Redis) -> None:
        while True:
            try:
                async with redis.pubsub() as pubsub:  # its connection closed on the way out
                    await pubsub.subscribe(REDIS_CHANNEL)
                    # signals published while this worker was not subscribed (Redis restarted,
                    # or the connection dropped) are gone: read what changed meanwhile now, not
                    # at the next sync interval
                    await self.pull()
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            await self.pull()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("redis subscription lost; retrying in 1 s")
                await asyncio.sleep(1.0)
