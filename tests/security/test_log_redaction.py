"""Credentials never reach an operator's output: a driver's exception carrying its DSN,
the configured database password, a key in a traceback (the process log), and a
database or Redis failure told by ``faregate doctor`` (which names the driver's error,
credentials masked, instead of printing it raw)."""

from __future__ import annotations

import io
import json
import logging
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from faregate.cli import cli
from faregate.observe import logs

DB_PASSWORD = "db-pass-0123-secret"


def test_tracebacks_and_configured_secrets_are_scrubbed() -> None:
    sink = io.StringIO()
    saved = logging.getLogger().handlers[:], logging.getLogger().level, sys.excepthook
    logs.configure("info", "json", stream=sink, secrets=[DB_PASSWORD])
    try:
        try:
            raise ConnectionError(f"could not connect to postgres://fg:{DB_PASSWORD}@db.internal/fg "
                                  f"(password={DB_PASSWORD}, key sk-abcdefghijklmnop)")
        except ConnectionError:
            logging.getLogger("faregate.test").exception("the database said: %s", f"{DB_PASSWORD} refused")
        logs.stop()
    finally:
        logs.stop()
        root = logging.getLogger()
        root.handlers, root.level = saved[0], saved[1]
        sys.excepthook = saved[2]
        logging.captureWarnings(False)
    text = sink.getvalue()
    record = json.loads(text)
    assert DB_PASSWORD not in text and "sk-abcdefghijklmnop" not in text
    assert "postgres://fg:***@db.internal/fg" in record["exc_info"]  # what failed is still told
    assert record["message"] == "the database said: [REDACTED] refused"


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("FAREGATE_") and not name.startswith("FAREGATE_TEST_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("FAREGATE_DATA_DIR", str(tmp_path / "data"))


def test_doctor_masks_a_drivers_words(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A driver that quotes its DSN (several do, in their connection errors)."""
    from faregate.db import storage

    async def refused(config: object) -> None:
        raise ConnectionError(f"connection to mysql://fg:{DB_PASSWORD}@db.internal:3306/fg refused")

    monkeypatch.setattr(storage, "open_storage", refused)
    monkeypatch.setenv("FAREGATE_DB_URL", f"mysql://fg:{DB_PASSWORD}@db.internal:3306/fg")
    result = CliRunner().invoke(cli, ["doctor"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert DB_PASSWORD not in result.output
    assert ("FAIL  database: mysql unreachable: ConnectionError: connection to mysql://fg:***@db.internal:3306/fg "
            "refused") in result.output


@pytest.mark.mariadb
def test_doctor_on_a_real_refusal_names_the_root_cause(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """MariaDB refuses the password: tortoise's wrapper says only "can't connect"; the
    root cause says why. A Redis URL redis-py cannot read is one line, not a traceback."""
    pytest.importorskip("faregate_storage_mysql")
    monkeypatch.setenv("FAREGATE_DB_URL", f"mysql://root:{DB_PASSWORD}@127.0.0.1:3306/nowhere")
    monkeypatch.setenv("FAREGATE_REDIS_URL", f"redis://:{DB_PASSWORD}@127.0.0.1:notaport/0")
    result = CliRunner().invoke(cli, ["doctor"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception  # no traceback
    assert DB_PASSWORD not in result.output
    assert "FAIL  database: mysql unreachable: DBConnectionError" in result.output
    assert "(cause: OperationalError: (1045, \"Access denied for user 'root'" in result.output, result.output
    assert "FAIL  redis: bad URL: ValueError: Port could not be cast to integer value" in result.output
