"""``faregate import new-api`` into the database of a gateway that is running (issue 28, item 12):
its keys, users and channels work at once on every worker, without a restart and without waiting
for the periodic database check (``FAREGATE_SYNC_INTERVAL`` is set far beyond the test's deadline
here, so only the import's own signal can make them work). Also the four-slash SQLite URL Python
users write (``sqlite:////abs/path``), for ``--from`` and for ``FAREGATE_DB_URL`` alike."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from faregate.db.dsn import sqlite_file
from faregate.importing.source import sqlite_path
from faregate.testing.harness import GatewayProcess
from faregate.testing.newapi_db import USER_KEY, rows, sqlite_source

#: far beyond the deadline: the periodic check cannot be what makes an imported key work
NO_PERIODIC_CHECK = "3600"
DEADLINE = 30.0
SHARED = {"FAREGATE_CRYPTO_SECRET": "import-test-crypto-secret", "FAREGATE_SESSION_SECRET": "import-test-session",
          "FAREGATE_SYNC_INTERVAL": NO_PERIODIC_CHECK}


def _import(env: dict[str, str], source: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "faregate.cli", "import", "new-api", "--from", source, "--json"],
                          env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr + done.stdout
    report: dict[str, Any] = json.loads(done.stdout[done.stdout.index("{"):])
    return report


def _key_works_everywhere(base_url: str) -> float:
    """Seconds until the imported key is accepted, then that every worker accepts it (a fresh
    connection a request lands on either worker); raises when the deadline passes."""
    started = time.monotonic()
    headers = {"Authorization": f"Bearer sk-{USER_KEY}"}
    while httpx.get(base_url + "/v1/models", headers=headers, timeout=30).status_code != 200:
        if time.monotonic() - started > DEADLINE:
            raise AssertionError(f"the imported key is still refused after {DEADLINE:.0f} s")
        time.sleep(0.1)
    waited = time.monotonic() - started
    statuses = {httpx.get(base_url + "/v1/models", headers=headers, timeout=30).status_code for _ in range(20)}
    assert statuses == {200}, statuses
    return waited


async def _run(proc: GatewayProcess, cli_env: dict[str, str], source: str) -> dict[str, Any]:
    await asyncio.to_thread(proc.start)
    try:
        before = await asyncio.to_thread(httpx.get, proc.base_url + "/v1/models",
                                         headers={"Authorization": f"Bearer sk-{USER_KEY}"})
        assert before.status_code == 401  # not there yet
        report = await asyncio.to_thread(_import, cli_env, source)
        await asyncio.to_thread(_key_works_everywhere, proc.base_url)
        return report
    finally:
        await asyncio.to_thread(proc.stop)


async def test_an_import_reaches_a_running_gateway_at_once(tmp_path: Path) -> None:
    """The import run where the gateway runs (the same data directory): both workers take the
    imported key at once."""
    source = sqlite_source(tmp_path / "one-api.db", rows("http://127.0.0.1:9", "sk-upstream"))
    proc = GatewayProcess(str(tmp_path / "gw"), workers=2, env=SHARED)
    report = await _run(proc, proc.env, source)
    assert any("told to reload" in note for note in report["notes"]), report["notes"]
    assert any("no FAREGATE_REDIS_URL" in note for note in report["notes"])  # and what that means, said


async def test_an_import_from_elsewhere_reaches_a_gateway_on_the_same_sqlite_file(tmp_path: Path) -> None:
    """The gateway and the import share a SQLite database given by an absolute four-slash URL
    (``FAREGATE_DB_URL=sqlite:////…``, ``--from sqlite:////…``) but not their data directories:
    the signal lives beside the database, where every process using it looks."""
    source = tmp_path / "new api" / "one-api.db"  # a space: the read-only open quotes it
    source.parent.mkdir()
    sqlite_source(source, rows("http://127.0.0.1:9", "sk-upstream"))
    database = tmp_path / "db" / "faregate.db"
    database.parent.mkdir()
    url = "sqlite:///" + str(database)  # "sqlite:///" + "/tmp/…": four slashes
    proc = GatewayProcess(str(tmp_path / "gw"), workers=2, env={**SHARED, "FAREGATE_DB_URL": url})
    cli_env = {**proc.env, "FAREGATE_DATA_DIR": str(tmp_path / "elsewhere")}
    report = await _run(proc, cli_env, "sqlite:///" + str(source))
    assert {t["table"]: t["imported"] for t in report["tables"]}["tokens"] == 2
    assert database.exists() and not (tmp_path / "gw" / "faregate.db").exists()  # the URL's file, not the default
    assert (database.parent / "faregate.epoch").exists()


@pytest.mark.mariadb
async def test_an_import_from_another_host_reaches_the_gateway_through_redis(tmp_path: Path,
                                                                            mariadb_url: str) -> None:
    """A MariaDB target and an import run with another data directory (as on another host): Redis
    carries the signal."""
    import redis

    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/0").ping()
    except redis.RedisError:
        pytest.skip("no Redis server")
    source = sqlite_source(tmp_path / "one-api.db", rows("http://127.0.0.1:9", "sk-upstream"))
    env = {**SHARED, "FAREGATE_DB_URL": mariadb_url, "FAREGATE_REDIS_URL": "redis://127.0.0.1:6379/0"}
    proc = GatewayProcess(str(tmp_path / "gw"), workers=2, env=env)
    report = await _run(proc, {**proc.env, "FAREGATE_DATA_DIR": str(tmp_path / "elsewhere")}, source)
    assert any("through Redis" in note for note in report["notes"]), report["notes"]


def test_sqlite_urls() -> None:
    assert sqlite_file("sqlite:///data/faregate.db") == "/data/faregate.db"  # Faregate's (and tortoise's) form
    assert sqlite_file("sqlite:////data/faregate.db") == "/data/faregate.db"  # SQLAlchemy's, Python users write it
    assert sqlite_file("sqlite://data/faregate.db?mode=rwc") == "data/faregate.db"  # relative
    assert sqlite_file("sqlite://:memory:") == ":memory:"
    assert sqlite_path("sqlite:////data/one-api.db") == "/data/one-api.db"
    assert sqlite_path("sqlite:////data/new%20api/one-api.db") == "/data/new api/one-api.db"
    assert sqlite_path(os.path.join("data", "one-api.db")) == "data/one-api.db"
