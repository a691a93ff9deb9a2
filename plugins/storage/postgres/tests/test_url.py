"""URL → tortoise connection config (no server needed)."""

from __future__ import annotations

import pytest

from faregate.testing.conformance import installed_storage_backends, pick_backend, tortoise_config
from faregate_storage_postgres import PostgresBackend, parse_url


def test_full_url() -> None:
    creds = parse_url("postgresql://fg:s%40cret@db.internal:6543/faregate?maxsize=20&pool_recycle=120"
                      "&connect_timeout=2.5&sslmode=require&statement_cache_size=0&schema=gw")
    assert creds == {"host": "db.internal", "port": 6543, "user": "fg", "password": "s@cret",
                     "database": "faregate", "minsize": 1, "maxsize": 20,
                     "max_inactive_connection_lifetime": 120.0, "timeout": 2.5, "application_name": "faregate",
                     "ssl": "require", "statement_cache_size": 0, "schema": "gw"}


def test_defaults_and_unix_socket() -> None:
    creds = parse_url("postgres:///fg?host=/var/run/postgresql")
    assert (creds["host"], creds["port"], creds["user"], creds["password"]) == ("/var/run/postgresql", 5432,
                                                                                None, None)
    assert (creds["maxsize"], creds["timeout"]) == (10, 10.0)


@pytest.mark.parametrize("url", ["postgres://u@h/", "postgres://u@h/fg?max_size=3",
                                 "postgres://u@h/fg?maxsize=many", "mysql://u@h/fg"])
def test_bad_urls(url: str) -> None:
    with pytest.raises(ValueError):
        parse_url(url)


def test_registered_through_the_entry_point() -> None:
    backends = installed_storage_backends()
    for scheme in ("postgres", "postgresql"):
        backend = pick_backend(f"{scheme}://u@localhost/fg", backends)
        assert isinstance(backend, PostgresBackend) and backend.name == "postgres"
    _, config = tortoise_config("postgres://u@localhost/fg", backends)
    assert config["connections"]["default"]["engine"] == "tortoise.backends.asyncpg"
