"""A careless operator's mistakes get one clear line, not a traceback (issue 8, #14)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import click
import httpx
import pytest

from faregate.settings import CORE_SETTINGS, SettingError, Settings
from faregate.testing.harness import free_port
from faregate.testing.pytest_plugin import MARIADB_URL, POSTGRES_URL, unique_db_name


def _run_cli(tmp_path: object, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "FAREGATE_DATA_DIR": str(tmp_path), **env}
    return subprocess.run([sys.executable, "-m", "faregate.cli", *args], env=full, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("name,value", [("FAREGATE_MAX_BODY_MB", "lots"), ("FAREGATE_MIGRATE", "maybe"),
                                        ("FAREGATE_FLUSH_INTERVAL", "-1"), ("FAREGATE_SYNC_INTERVAL", "nan"),
                                        # database URLs only the storage plugins can judge
                                        ("FAREGATE_DB_URL", "mysql://fg:url-pass-5555@127.0.0.1:notaport/fg"),
                                        ("FAREGATE_DB_URL", "postgres://fg:url-pass-5555@[db/fg"),
                                        ("FAREGATE_DB_URL", "oracle://fg:url-pass-5555@db/fg")])
def test_bad_setting_stops_the_start_in_one_line(tmp_path: object, name: str, value: str) -> None:
    proc = _run_cli(tmp_path, "migrate", **{name: value})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("faregate: ") and name in lines[0] and "Traceback" not in proc.stderr
    assert "url-pass-5555" not in proc.stderr


def test_serve_refuses_a_bad_setting_before_binding(tmp_path: object) -> None:
    proc = _run_cli(tmp_path, "serve", "--port", "1", FAREGATE_STREAM_IDLE_TIMEOUT="soon")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("faregate: FAREGATE_STREAM_IDLE_TIMEOUT=")
    assert "Traceback" not in proc.stderr


#: settings whose values are free text (paths, names, secrets): any string is one
FREE_TEXT = {"config", "host", "data_dir", "redis_url", "crypto_secret", "session_secret", "plugins",
             "disabled_plugins", "metrics_token"}


def test_every_core_setting_refuses_garbage_by_name() -> None:
    for setting in CORE_SETTINGS:
        if setting.name in FREE_TEXT:
            continue
        with pytest.raises(SettingError, match=setting.env):
            Settings(CORE_SETTINGS, environ={setting.env: "not-a-value"})


def test_good_values_still_parse() -> None:
    settings = Settings(CORE_SETTINGS, environ={"FAREGATE_MIGRATE": "off", "FAREGATE_MAX_BODY_MB": "0.5"})
    assert settings.migrate is False and settings.max_body_mb == 0.5


# ---- issue 26, items 12-15: the port, the database, plugin names, the start's log --------------


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


@pytest.mark.mariadb
def test_a_wrong_mariadb_password_or_database_is_one_line(tmp_path: object) -> None:
    host = urlsplit(MARIADB_URL).netloc.rsplit("@", 1)[-1]
    missing = unique_db_name("fg_missing")
    for url, said in ((f"mysql://root:wrong-pass-5555@{host}/mysql", "Access denied"),
                      (f"mysql://root@{host}/{missing}", f"Unknown database '{missing}'")):
        for command in _database_commands():
            line = _one_line(_run_cli(tmp_path, *command, FAREGATE_DB_URL=url), "wrong-pass-5555")
            assert line.startswith("faregate: FAREGATE_DB_URL: cannot open the database mysql://root"), line
            assert said in line, (command, line)


@pytest.mark.postgres
def test_a_wrong_postgres_database_or_role_is_one_line(tmp_path: object) -> None:
    host = urlsplit(POSTGRES_URL).netloc.rsplit("@", 1)[-1]
    missing = unique_db_name("fg_missing")
    for url, said in ((f"postgres://postgres:pg-pass-5555@{host}/{missing}", f'database "{missing}" does not exist'),
                      (f"postgres://fg_nobody_5555:pg-pass-5555@{host}/postgres", "fg_nobody_5555")):
        for command in _database_commands():
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


@pytest.mark.parametrize("variable", ["FAREGATE_PLUGINS", "FAREGATE_DISABLED_PLUGINS"])
def test_a_plugin_name_nobody_installed_refuses_the_start(tmp_path: object, variable: str) -> None:
    """A typo in the allow list loaded nothing it named; in the block list it blocked nothing."""
    typo = "faregate-adapter-opnai"
    for command in (("serve", "--port", str(free_port())), ("migrate",)):
        line = _one_line(_run_cli(tmp_path, *command, **{variable: f"faregate-adapter-openai,{typo}"}))
        assert line.startswith(f"faregate: {variable} names '{typo}', which no installed plugin is (installed: ")
        assert "faregate-adapter-openai" in line.split("(installed: ", 1)[1]  # the installed ones, named
    listed = _run_cli(tmp_path, "plugins", "list", "--json", **{variable: typo})
    assert listed.returncode == 1
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows[typo]["state"] == "unknown" and variable in rows[typo]["reason"]
    checked = _run_cli(tmp_path, "doctor", **{variable: typo})
    assert checked.returncode == 1
    assert any(line.startswith("FAIL  plugin names: ") and typo in line
               for line in click.unstyle(checked.stdout).splitlines()), checked.stdout


def test_the_core_defaults_may_be_blocked_by_their_short_name(tmp_path: object) -> None:
    proc = _run_cli(tmp_path, "plugins", "list", "--json", FAREGATE_DISABLED_PLUGINS="pricing")
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    assert rows["faregate.default_plugins.pricing"]["state"] == "disabled"


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
