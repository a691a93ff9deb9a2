"""A careless operator's mistakes get one clear line, not a traceback (issue 26, items 12-15): a
port in use, a database that cannot be opened, and a start that says each thing once. Each test
starts ``faregate`` processes that get as far as the database or the listening socket; the
settings and plugin names are in test_operator_errors.py."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from faregate.testing.harness import free_port
from faregate.testing.pytest_plugin import MARIADB_URL, POSTGRES_URL, unique_db_name


def _run_cli(tmp_path: object, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "FAREGATE_DATA_DIR": str(tmp_path), **env}
    return subprocess.run([sys.executable, "-m", "faregate.cli", *args], env=full, capture_output=True,
                          text=True, timeout=120)


def _listening_socket() -> socket.socket:
    """A port some other program holds (listening, as a server would)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_in_use_ends_the_start_at_once_in_one_line(tmp_path: object, workers: str) -> None:
    """It used to log "listening", then Errno 98 with a traceback, then hang ignoring SIGTERM
    and SIGINT (the app had started; its database thread kept the process alive). The
    timeout below fails the test if it hangs: nothing here sends a signal."""
    with _listening_socket() as taken:
        port = str(taken.getsockname()[1])
        proc = _run_cli(tmp_path, "serve", "--port", port, "--workers", workers)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"faregate: port {port} on 127.0.0.1 is already in use; choose another with --port or FAREGATE_PORT"]
    assert "listening" not in proc.stdout + proc.stderr


def _one_line(proc: subprocess.CompletedProcess[str], secret: str = "") -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and (not secret or secret not in proc.stderr)
    return lines[0]


def _database_commands() -> list[tuple[str, ...]]:
    return [("migrate",), ("serve", "--port", str(free_port())), ("admin", "create-key", "--user", "root"),
            ("import", "new-api", "--from", "sqlite:///nowhere.db", "--dry-run")]


def _each_with_one_of(failures: tuple[tuple[str, str], ...]) -> list[tuple[tuple[str, ...], tuple[str, str]]]:
    """Each database command with one of the failures, taken in turn: every command reports
    through one function (``faregate.cli.runtime.reach_database``) and the reason is the
    driver's, so each command and each failure once is what the pairs add (all of them were
    twice the ``faregate`` processes, 2-3.5 s of CPU each)."""
    return [(command, failures[i % len(failures)]) for i, command in enumerate(_database_commands())]


@pytest.mark.mariadb
def test_a_wrong_mariadb_password_or_database_is_one_line(tmp_path: object) -> None:
    host = urlsplit(MARIADB_URL).netloc.rsplit("@", 1)[-1]
    missing = unique_db_name("fg_missing")
    failures = ((f"mysql://root:wrong-pass-5555@{host}/mysql", "Access denied"),
                (f"mysql://root@{host}/{missing}", f"Unknown database '{missing}'"))
    for command, (url, said) in _each_with_one_of(failures):
        line = _one_line(_run_cli(tmp_path, *command, FAREGATE_DB_URL=url), "wrong-pass-5555")
        assert line.startswith("faregate: FAREGATE_DB_URL: cannot open the database mysql://root"), line
        assert said in line, (command, line)


@pytest.mark.postgres
def test_a_wrong_postgres_database_or_role_is_one_line(tmp_path: object) -> None:
    host = urlsplit(POSTGRES_URL).netloc.rsplit("@", 1)[-1]
    missing = unique_db_name("fg_missing")
    failures = ((f"postgres://postgres:pg-pass-5555@{host}/{missing}", f'database "{missing}" does not exist'),
                (f"postgres://fg_nobody_5555:pg-pass-5555@{host}/postgres", "fg_nobody_5555"))
    for command, (url, said) in _each_with_one_of(failures):
        # new-api's variable names the setting in the line when it is the one used
        line = _one_line(_run_cli(tmp_path, *command, SQL_DSN=url), "pg-pass-5555")
        assert line.startswith("faregate: SQL_DSN: cannot open the database postgres://"), line
        assert said in line, (command, line)


def test_an_unreachable_database_host_is_one_line(tmp_path: object) -> None:
    closed = free_port()  # nobody listens there
    line = _one_line(_run_cli(tmp_path, "migrate", FAREGATE_DB_URL=f"mysql://fg:url-pass-5555@127.0.0.1:{closed}/fg"),
                     "url-pass-5555")
    assert line.startswith("faregate: FAREGATE_DB_URL: cannot open the database mysql://fg:***@127.0.0.1")
    assert "ConnectionRefusedError" in line or "Can't connect" in line


def test_an_unusable_sqlite_path_or_data_dir_is_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    for command in _database_commands():
        line = _one_line(_run_cli(tmp_path, *command, FAREGATE_DB_URL=f"sqlite:///{a_file}/faregate.db"))
        assert line == f"faregate: FAREGATE_DB_URL: cannot open the database sqlite:///{a_file}/faregate.db: " \
                       "OperationalError: unable to open database file", (command, line)
    line = _one_line(_run_cli(tmp_path, "migrate", FAREGATE_DATA_DIR=str(a_file / "data")))
    assert line.startswith(f"faregate: FAREGATE_DATA_DIR: the data directory {a_file}/data cannot be used: "), line


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_start_says_each_thing_once(tmp_path: Path, workers: str) -> None:
    """The data directory's warning came three times (more with workers), "Tortoise-ORM
    shutdown" just before "listening", and each worker said "Running on" again."""
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)  # readable by others: worth one warning
    port = free_port()
    env = {**os.environ, "FAREGATE_DATA_DIR": str(data)}
    proc = subprocess.Popen([sys.executable, "-m", "faregate.cli", "serve", "--port", str(port), "--workers", workers],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 180  # generous: a loaded machine starts slowly
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            time.sleep(0.2)
        else:
            raise AssertionError("the gateway did not become ready")
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, output
    messages = [line.split(": ", 1)[1] for line in output.splitlines() if ": " in line]
    warning = f"data directory {data} is readable by others (mode 755); 0700 is recommended"
    listening = f"Faregate listening on http://127.0.0.1:{port} ({workers} worker(s))"
    assert messages.count(warning) == 1 and messages.count(listening) == 1, output
    assert messages.index(warning) < messages.index(listening)
    assert not any("Tortoise-ORM" in m or m.startswith("Running on") for m in messages), output
    assert "Traceback" not in output
