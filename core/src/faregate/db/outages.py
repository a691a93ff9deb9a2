"""Telling a database that is out of reach or busy apart from other database errors.

The first says "try again" (a 503): the server is down or restarting, the connection broke, a
lock was not had in time, the engine rolled the transaction back as a deadlock's victim. The
second is a bug or bad data (a 500, with its traceback in the log). tortoise wraps the driver's
error (``OperationalError(driver_error)``, ``DBConnectionError``); what it wraps decides."""

from __future__ import annotations

import sqlite3

from faregate.db.deadlocks import MYSQL_DEADLOCK, POSTGRES_DEADLOCK

#: MySQL/MariaDB: too many connections, lock wait timeout, deadlock; the client's "can't
#: connect" (socket, TCP), "server has gone away", "lost connection" (twice)
MYSQL_UNAVAILABLE = frozenset({1040, 1205, MYSQL_DEADLOCK, 2002, 2003, 2006, 2013, 2055})
#: PostgreSQL SQLSTATEs: deadlock, serialization failure, lock not available, too many
#: connections, and the classes "connection exception" (08…) and "operator intervention" (57P0…)
POSTGRES_UNAVAILABLE = frozenset({POSTGRES_DEADLOCK, "40001", "55P03", "53300"})
POSTGRES_UNAVAILABLE_CLASSES = ("08", "57P0")
#: SQLite: the busy timeout passed with another process holding the write lock
SQLITE_UNAVAILABLE = ("database is locked", "database is busy")
#: how many errors to look at, ``exc`` and those it wraps (``args``, ``__cause__``, ``__context__``)
MAX_ERRORS = 24


def is_unavailable(exc: BaseException) -> bool:
    """True when ``exc``, a tortoise error, says the database is out of reach or busy for now."""
    from tortoise.exceptions import BaseORMException, DBConnectionError

    if not isinstance(exc, BaseORMException):
        return False
    todo: list[object] = [exc]
    seen: set[int] = set()
    while todo and len(seen) < MAX_ERRORS:
        error = todo.pop()
        if id(error) in seen or not isinstance(error, BaseException):
            continue
        seen.add(id(error))
        if isinstance(error, DBConnectionError | ConnectionError):
            return True
        sqlstate = getattr(error, "sqlstate", None)
        if isinstance(sqlstate, str) and (sqlstate in POSTGRES_UNAVAILABLE
                                          or sqlstate.startswith(POSTGRES_UNAVAILABLE_CLASSES)):
            return True
        if error.args and isinstance(error.args[0], int) and error.args[0] in MYSQL_UNAVAILABLE:
            return True
        if isinstance(error, sqlite3.OperationalError) and str(error).startswith(SQLITE_UNAVAILABLE):
            return True
        todo.extend([*error.args, error.__cause__, error.__context__])
    return False
