"""A careless operator's mistakes get one clear line, not a traceback (issue 8, #14)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from faregate.settings import CORE_SETTINGS, SettingError, Settings


def _run_cli(tmp_path: object, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "FAREGATE_DATA_DIR": str(tmp_path), **env}
    return subprocess.run([sys.executable, "-m", "faregate.cli", *args], env=full, capture_output=True,
                          text=True, timeout=60)


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
