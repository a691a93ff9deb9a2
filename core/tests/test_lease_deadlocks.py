"""A lease transaction the engine picks as a deadlock's victim (two nodes taking leases on one
balance at once, seen on MariaDB as a 503 in the Redis-restart test) is run again instead of
failing the request; any other database error still fails it at once."""

from __future__ import annotations

from typing import Any

import pytest
from tortoise.exceptions import IntegrityError, OperationalError

from faregate.billing import leases
from faregate.db.deadlocks import is_deadlock


def mysql_deadlock() -> OperationalError:
    import pymysql

    return OperationalError(pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock; "
                                                                "try restarting transaction"))


def test_deadlocks_of_both_engines_are_told_apart_from_other_errors() -> None:
    import asyncpg
    import pymysql

    assert is_deadlock(mysql_deadlock())
    assert is_deadlock(OperationalError(asyncpg.exceptions.DeadlockDetectedError("deadlock detected")))
    wrapped = OperationalError("deadlock")
    wrapped.__cause__ = asyncpg.exceptions.DeadlockDetectedError("deadlock detected")
    assert is_deadlock(wrapped)
    # a lock wait timeout rolls back the statement only; a lost connection is an outage
    assert not is_deadlock(OperationalError(pymysql.err.OperationalError(1205, "Lock wait timeout exceeded")))
    assert not is_deadlock(OperationalError(pymysql.err.OperationalError(2013, "Lost connection")))
    assert not is_deadlock(OperationalError(asyncpg.exceptions.SerializationError("could not serialize")))
    assert not is_deadlock(IntegrityError("duplicate"))


def take_failing(monkeypatch: pytest.MonkeyPatch, errors: list[Exception]) -> list[int]:
    calls: list[int] = []

    async def take(worker_id: str, kind: str, ref_id: int, need: int, size: int) -> int:
        calls.append(size)
        if errors:
            raise errors.pop(0)
        return size

    monkeypatch.setattr(leases, "_take_lease", take)
    return calls


async def test_a_deadlocked_lease_is_taken_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = take_failing(monkeypatch, [mysql_deadlock(), mysql_deadlock()])
    assert await leases.lease_from_db("w", "user", 1, 100, 100) == 100
    assert calls == [100, 100, 100]


async def test_lease_deadlocks_stop_being_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = take_failing(monkeypatch, [mysql_deadlock() for _ in range(leases.DEADLOCK_ATTEMPTS)])
    with pytest.raises(OperationalError):
        await leases.lease_from_db("w", "user", 1, 100, 100)
    assert len(calls) == leases.DEADLOCK_ATTEMPTS


@pytest.mark.parametrize("error", [OperationalError("connection refused"), IntegrityError("duplicate")])
async def test_other_lease_errors_fail_at_once(monkeypatch: pytest.MonkeyPatch, error: Any) -> None:
    calls = take_failing(monkeypatch, [error])
    with pytest.raises(type(error)):
        await leases.lease_from_db("w", "user", 1, 100, 100)
    assert len(calls) == 1
