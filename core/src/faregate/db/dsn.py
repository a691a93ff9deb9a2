"""Database addresses as new-api writes them, turned into the URLs Faregate's storage
plugins read: ``SQL_DSN`` is a Go MySQL DSN (``user:pass@tcp(host:port)/db?opts``), a
``postgres://`` URL, or empty / ``local…`` for SQLite at ``SQLITE_PATH``."""

from __future__ import annotations

import re
from urllib.parse import quote

_GO_MYSQL = re.compile(r"^(?:(?P<user>[^:@/]*)(?::(?P<password>.*))?@)?tcp\((?P<address>[^)]*)\)/(?P<db>[^?]*)"
                       r"(?:\?.*)?$")
#: the tortoise engine of SQLite connections (faregate.db.sqlite_client: its transactions begin
#: with BEGIN IMMEDIATE), named here so that a caller needs not import tortoise to name it
SQLITE_ENGINE = "faregate.db.sqlite_client"
#: any scheme: storage plugins choose theirs (the storage layer refuses one no plugin serves)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(value: str) -> bool:
    return _URL.match(value) is not None


def from_go_mysql(dsn: str) -> str:
    """``root:pw@tcp(db:3306)/oneapi?parseTime=true`` → ``mysql://root:pw@db:3306/oneapi``.
    Go's driver options (charset, parseTime, …) have no meaning here and are dropped."""
    found = _GO_MYSQL.match(dsn.strip())
    if found is None:
        raise ValueError("expected a URL (sqlite:///…, mysql://…, postgres://…) or a Go MySQL DSN "
                         "user:password@tcp(host:port)/database")
    user, password = found["user"] or "root", found["password"]
    credentials = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    address = found["address"] or "127.0.0.1:3306"
    return f"mysql://{credentials}@{address}/{found['db']}"


def sqlite_file(url: str) -> str:
    """The file of a SQLite URL: ``sqlite:///abs/db`` and SQLAlchemy's ``sqlite:////abs/db`` are
    ``/abs/db``, ``sqlite://rel/db`` is ``rel/db`` (relative to the working directory),
    ``sqlite://:memory:`` stays; a query (``?mode=…``) is no part of it."""
    path = url.split("://", 1)[1].split("?", 1)[0]
    return "/" + path.lstrip("/") if path.startswith("/") else path


def sqlite_url(path: str) -> str:
    """new-api's ``SQLITE_PATH`` (``one-api.db?_busy_timeout=30000``) as a SQLite URL."""
    return "sqlite://" + path.split("?", 1)[0]  # as the SQLite backend reads it: sqlite:///abs, sqlite://rel


def database_url(value: str) -> str:
    """Any accepted form (a URL or a Go MySQL DSN) as a URL; empty stays empty."""
    value = value.strip()
    if not value or is_url(value):
        return value
    return from_go_mysql(value)


def from_newapi_env(sql_dsn: str | None, sqlite_path: str | None) -> str | None:
    """The database new-api's two variables mean (a URL, or a Go DSN for
    :func:`database_url`), or None when they say nothing."""
    if sql_dsn and not sql_dsn.startswith("local"):
        return sql_dsn
    if sqlite_path:
        return sqlite_url(sqlite_path)
    return None
