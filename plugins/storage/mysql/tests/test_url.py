"""URL → tortoise connection config (no server needed)."""

from __future__ import annotations

import pytest

from faregate.testing.conformance import installed_storage_backends, pick_backend, tortoise_config
from faregate_storage_mysql import MySQLBackend, parse_url


def test_full_url() -> None:
    creds = parse_url("mysql://fg:s%40cret@db.internal:3307/faregate?maxsize=20&pool_recycle=1800"
                      "&connect_timeout=2.5&minsize=2")
    assert creds == {"host": "db.internal", "port": 3307, "user": "fg", "password": "s@cret",
                     "database": "faregate", "charset": "utf8mb4", "minsize": 2, "maxsize": 20,
                     "pool_recycle": 1800, "connect_timeout": 2.5}
    assert isinstance(creds["pool_recycle"], int)  # tortoise#784: a str is not honoured


def test_defaults_and_mariadb_scheme() -> None:
    creds = parse_url("mariadb://root@localhost/fg")
    assert (creds["host"], creds["port"], creds["user"], creds["password"]) == ("localhost", 3306, "root", "")
    assert (creds["charset"], creds["pool_recycle"], creds["maxsize"]) == ("utf8mb4", 3600, 10)


@pytest.mark.parametrize("url", ["mysql://root@localhost/", "mysql://root@localhost/fg?maxsze=3",
                                 "mysql://root@localhost/fg?maxsize=many", "postgres://x@y/z"])
def test_bad_urls(url: str) -> None:
    with pytest.raises(ValueError):
        parse_url(url)


def test_registered_through_the_entry_point() -> None:
    backends = installed_storage_backends()
    for scheme in ("mysql", "mariadb"):
        backend = pick_backend(f"{scheme}://root@localhost/fg", backends)
        assert isinstance(backend, MySQLBackend) and backend.name == "mysql"
    _, config = tortoise_config("mysql://root@localhost/fg", backends)
    assert config["connections"]["default"]["engine"] == "tortoise.backends.mysql"
