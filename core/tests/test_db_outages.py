"""A database that is out of reach or busy answers 503 and "try again", not a 500 with a
traceback: down, restarting, a broken connection, a lock not had within the busy timeout, a
deadlock's victim, on each engine as tortoise wraps its driver's error; any other database
error (a bug, bad data) stays a 500."""

from __future__ import annotations

import sqlite3

import asyncpg
import pymysql
import pytest
from quart import Quart
from tortoise.exceptions import DBConnectionError, IntegrityError, OperationalError

from faregate.db.outages import is_unavailable
from faregate.edge import errors


def _wrapped(driver_error: BaseException, wrapper: type[Exception] = OperationalError) -> Exception:
    """As tortoise's clients raise them: ``raise OperationalError(exc)`` inside ``except``."""
    try:
        try:
            raise driver_error
        except BaseException as exc:
            raise wrapper(exc) from None
    except Exception as exc:
        return exc


UNAVAILABLE = [
    _wrapped(sqlite3.OperationalError("database is locked")),
    _wrapped(pymysql.err.OperationalError(2003, "Can't connect to MySQL server on '127.0.0.1'")),
    _wrapped(pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")),
    _wrapped(pymysql.err.OperationalError(1205, "Lock wait timeout exceeded; try restarting transaction")),
    _wrapped(pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock")),
    _wrapped(asyncpg.exceptions.CannotConnectNowError("the database system is starting up")),
    _wrapped(asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator command")),
    _wrapped(asyncpg.exceptions.DeadlockDetectedError("deadlock detected")),
    _wrapped(ConnectionRefusedError(111, "Connection refused")),
    DBConnectionError("can't connect"),
]
OTHER = [
    _wrapped(sqlite3.OperationalError("no such column: users.nope")),
    _wrapped(sqlite3.IntegrityError("UNIQUE constraint failed: users.username"), IntegrityError),
    _wrapped(pymysql.err.OperationalError(1054, "Unknown column 'nope' in 'field list'")),
    _wrapped(asyncpg.exceptions.UndefinedColumnError("column \"nope\" does not exist")),
    ConnectionRefusedError(111, "not the database's: a plain error outside tortoise"),
    ValueError("database is locked"),
]


@pytest.mark.parametrize("error", UNAVAILABLE, ids=repr)
def test_an_unreachable_or_busy_database_is_told_apart(error: Exception) -> None:
    assert is_unavailable(error)


@pytest.mark.parametrize("error", OTHER, ids=repr)
def test_other_errors_are_not(error: Exception) -> None:
    assert not is_unavailable(error)


async def test_a_request_the_database_could_not_serve_is_a_503_in_its_clients_shape() -> None:
    app = Quart(__name__)
    errors.install(app)
    raised: list[Exception] = []

    @app.route("/api/user/", methods=["PUT"])
    @app.route("/v1/things", methods=["POST"])
    async def failing() -> str:
        raise raised[-1]

    client = app.test_client()
    raised.append(UNAVAILABLE[0])
    management = await client.put("/api/user/")
    assert management.status_code == 503 and management.headers["Retry-After"] == "1"
    assert await management.get_json() == {"success": False, "message": errors.DB_UNAVAILABLE}
    api = await client.post("/v1/things")
    assert api.status_code == 503
    assert (await api.get_json())["error"]["code"] == "db_unavailable"

    raised.append(OTHER[0])  # a bug stays a 500
    assert (await client.put("/api/user/")).status_code == 500
