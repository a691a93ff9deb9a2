"""A careless operator's mistakes get one clear line, not a traceback (issue 8, #14): settings and
plugin names. The port, the database and the start's log are in test_operator_errors_starts.py (two
files, so that the test workers, which keep a file's tests together, run them side by side)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest

from faregate.settings import CORE_SETTINGS, SettingError, Settings
from faregate.testing.harness import free_port


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


# ---- issue 26, item 14: plugin names (the port, the database and the start's log: test_operator_errors_starts.py)


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


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
