"""Who holds quota leases: worker identities, and returning the leases of workers that
stopped. A worker's id names its machine (boot and pid namespace) and pid, so a
sweeper on the same machine sees at once that its process is gone, e.g. the
supervisor right after a worker was killed, or a restarted single-process gateway,
instead of waiting for the heartbeat to go stale (``sweep_interval`` × 3)."""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from typing import cast

from tortoise.transactions import in_transaction

from faregate.billing.leases import return_to_balance
from faregate.db import models as m

log = logging.getLogger("faregate.billing")


def _host_key() -> str | None:
    """This machine's boot and pid namespace, hashed: two worker ids carrying the same key
    name pids that this process can look up. None where that cannot be told (not Linux)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            boot = fh.read().strip()
        pid_ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    return hashlib.sha256(f"{boot}:{pid_ns}".encode()).hexdigest()[:12]


HOST_KEY = _host_key()


def new_worker_id() -> str:
    """``<host key>-<pid>-<random>``: lets a sweeper on the same machine see at once that
    the worker's process is gone, without waiting for its heartbeat to go stale."""
    return f"{HOST_KEY or 'nohost'}-{os.getpid()}-{uuid.uuid4().hex[:16]}"


def _process_gone(worker_id: str) -> bool:
    """True only when ``worker_id`` names a process of this machine (and pid namespace)
    that no longer exists; anything else (another machine, a reused pid) is left to the
    heartbeat."""
    key, _, rest = worker_id.partition("-")
    pid, _, _ = rest.partition("-")
    if HOST_KEY is None or key != HOST_KEY or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    return False


async def sweep_dead_workers(stale_after: float) -> int:
    """Return the leases of workers whose heartbeat stopped or, on this machine, whose
    process is gone; returns how many workers were swept."""
    cutoff = int(time.time() - stale_after)
    # values_list(flat=True) gives the values (tortoise types them as tuples)
    dead = cast("list[str]", await m.Worker.filter(heartbeat__lt=cutoff).values_list("id", flat=True))
    orphan_workers = set(cast("list[str]", await m.QuotaLease.all().distinct().values_list("worker", flat=True)))
    live = set(cast("list[str]", await m.Worker.filter(heartbeat__gte=cutoff).values_list("id", flat=True)))
    gone = {w for w in live | orphan_workers if _process_gone(w)}
    targets = set(dead) | (orphan_workers - live) | gone
    for worker in targets:
        await release_worker(worker)
    if targets:
        log.info("returned the quota leases of %d stopped worker(s)", len(targets))
    return len(targets)


async def release_worker(worker: str) -> None:
    """Give every lease of ``worker`` back to its balance and forget the worker (its
    unflushed spending is lost with it: the owner is refunded, never overcharged)."""
    async with in_transaction() as conn:
        leases = await m.QuotaLease.filter(worker=worker).using_db(conn)
        for lease in leases:
            await return_to_balance(lease.kind, lease.ref_id, lease.held, conn)
        await m.QuotaLease.filter(worker=worker).using_db(conn).delete()
        await m.Worker.filter(id=worker).using_db(conn).delete()
