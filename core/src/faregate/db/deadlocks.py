"""Telling a deadlock apart from other database errors.

InnoDB and PostgreSQL pick one transaction of a deadlock and roll it back whole ("try
restarting transaction"): nothing of it was written, so it is safe to run again. Two nodes
taking quota leases on one balance at once (a balance row updated, a lease row inserted under
a unique index) meet this now and then on MariaDB."""

from __future__ import annotations

#: MySQL/MariaDB ER_LOCK_DEADLOCK
MYSQL_DEADLOCK = 1213
#: PostgreSQL deadlock_detected
POSTGRES_DEADLOCK = "40P01"


def is_deadlock(exc: BaseException) -> bool:
    """True when ``exc`` (tortoise's error, or the driver's one it wraps) says the engine rolled
    the transaction back as a deadlock's victim."""
    for error in (exc, *exc.args, exc.__cause__):
        if getattr(error, "sqlstate", None) == POSTGRES_DEADLOCK:
            return True
        if isinstance(error, BaseException) and error.args and error.args[0] == MYSQL_DEADLOCK:
            return True
    return False
