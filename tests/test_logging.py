"""Operators' logs: one line per relayed request (request id, user, key name, model,
channel, status, attempts, latency, end reason), failures logged with their cause and
redacted, JSON mode writing nothing but JSON, and the level setting obeyed."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import openai
import pytest

from faregate.observe import logs
from faregate.testing.harness import AdminClient, GatewayProcess
from faregate_adapter_openai.testing import FakeOpenAI

UPSTREAM_KEY = "sk-upstream-secret-0123456789"

Served = Callable[..., Awaitable[tuple[GatewayProcess, str]]]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    started: list[GatewayProcess] = []

    async def start(fake: FakeOpenAI, **env: str) -> tuple[GatewayProcess, str]:
        proc = GatewayProcess(str(tmp_path / f"data{len(started)}"), env=env)
        await asyncio.to_thread(proc.start)
        started.append(proc)
        admin = AdminClient(proc.base_url)
        await admin.setup_root()
        await admin.set_option("RetryTimes", 1)
        await admin.add_channel(base_url=fake.base_url, models="gpt-4o-mini", key=UPSTREAM_KEY)
        await admin.add_channel(base_url=fake.base_url, models="gpt-4o-mini", key=UPSTREAM_KEY)
        key = await admin.add_token(name="laptop")
        await admin.close()
        return proc, key

    yield start
    for proc in started:
        await asyncio.to_thread(proc.stop)


async def _traffic(proc: GatewayProcess, key: str, fake: FakeOpenAI) -> str:
    client = openai.AsyncOpenAI(base_url=proc.base_url + "/v1", api_key=key, max_retries=0)
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    fake.fail_next(500, f"upstream exploded, key {UPSTREAM_KEY}")  # fails over to the other channel
    await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "again"}])
    with pytest.raises(openai.AuthenticationError):
        await openai.AsyncOpenAI(base_url=proc.base_url + "/v1", api_key="sk-wrong", max_retries=0
                                 ).chat.completions.create(model="gpt-4o-mini", messages=[])
    await asyncio.sleep(0.3)  # the writer thread flushes
    return str(raw.headers["x-request-id"])


async def _auto_disable(proc: GatewayProcess, key: str, fake: FakeOpenAI) -> str:
    """A channel's key refused by the upstream (401, the key echoed): the channel is
    disabled and the request fails over to the other one. The log, once the line is in."""
    client = openai.AsyncOpenAI(base_url=proc.base_url + "/v1", api_key=key, max_retries=0)
    fake.fail_next(401, f"Incorrect API key provided: {UPSTREAM_KEY}")
    await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "dead key"}])
    for _ in range(50):
        if "disabled automatically" in proc.logs():
            break
        await asyncio.sleep(0.1)
    return proc.logs()


async def test_json_mode_writes_only_json(served: Served) -> None:
    async with FakeOpenAI(api_key=UPSTREAM_KEY) as fake:
        proc, key = await served(fake, FAREGATE_LOG_FORMAT="json", FAREGATE_ACCESS_LOG="true")
        first_id = await _traffic(proc, key, fake)
        text = await _auto_disable(proc, key, fake)
    lines = [line for line in text.splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line is JSON, Hypercorn's too (its access log)
    assert any(r["logger"] == "hypercorn.access" for r in records)
    requests = [r for r in records if r.get("event") == "request"]
    first = next(r for r in requests if r["request_id"] == first_id)
    assert first["status"] == 200 and first["key_name"] == "laptop" and first["model"] == "gpt-4o-mini"
    assert first["attempts"] == 1 and first["end_reason"] == "done" and first["user_id"] == 1
    assert first["latency_ms"] >= first["overhead_ms"] >= 0 and first["channel_id"] in (1, 2)
    failover = [r for r in requests if r["attempts"] == 2]
    assert failover and failover[0]["status"] == 200
    refused = [r for r in requests if r["status"] == 401]
    assert refused and refused[0]["end_reason"] and refused[0]["user_id"] == 0
    cause = [r for r in records if r["level"] == "WARNING" and "answered 500" in r["message"]]
    assert cause and cause[0]["request_id"], "the failure is logged with its request id"
    # the auto-disable line says why, in the upstream's words, without the key it echoed
    disabled = [r for r in records if "disabled automatically" in r["message"]]
    assert len(disabled) == 1 and disabled[0]["level"] == "WARNING", disabled
    assert "upstream answered 401" in disabled[0]["message"]
    assert "(invalid_api_key): Incorrect API key provided: " in disabled[0]["message"]
    assert UPSTREAM_KEY not in text and key not in text and key.removeprefix("sk-") not in text


async def test_text_mode_and_level(served: Served) -> None:
    async with FakeOpenAI(api_key=UPSTREAM_KEY) as fake:
        proc, key = await served(fake)
        await _traffic(proc, key, fake)
        text = proc.logs()
        assert re.search(r"INFO faregate\.request: request \S+ /v1/chat/completions user=1 key='laptop' "
                         r"model='gpt-4o-mini' channel=\d status=200 attempts=1 end=done ms=", text)
        quiet, key2 = await served(fake, FAREGATE_LOG_LEVEL="warning")
        await _traffic(quiet, key2, fake)
        quiet_text = quiet.logs()
    assert "faregate.request" not in quiet_text and "answered 500" in quiet_text
    assert UPSTREAM_KEY not in text + quiet_text


def test_configure_routes_warnings_and_uncaught(tmp_path: Path) -> None:
    import io
    import sys
    import warnings

    sink = io.StringIO()
    saved = logging.getLogger().handlers[:], logging.getLogger().level, sys.excepthook
    try:
        logs.configure("info", "json", stream=sink)
        logs.request_id_var.set("req-1")
        logging.getLogger("faregate.test").warning("bearer sk-abcdefghijklmnop leaked?")
        warnings.warn("careful", UserWarning, stacklevel=1)
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            sys.excepthook(*sys.exc_info())  # type: ignore[arg-type]
        logs.stop()
    finally:
        logs.stop()
        root = logging.getLogger()
        root.handlers, root.level = saved[0], saved[1]
        sys.excepthook = saved[2]
        logging.captureWarnings(False)
    records = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert records[0]["request_id"] == "req-1" and "sk-abcdefghijklmnop" not in records[0]["message"]
    assert any(r["logger"] == "py.warnings" for r in records)
    assert records[-1]["level"] == "CRITICAL" and "RuntimeError: boom" in records[-1]["exc_info"]


def _configured(sink: object, **options: object) -> Callable[[], None]:
    """Configure process logging into ``sink``; the undo (what the test process had)."""
    import sys

    saved = logging.getLogger().handlers[:], logging.getLogger().level, sys.excepthook

    def restore() -> None:
        logs.stop()
        root = logging.getLogger()
        root.handlers, root.level = saved[0], saved[1]
        sys.excepthook = saved[2]
        logging.captureWarnings(False)

    logs.configure("info", str(options.pop("fmt", "json")), stream=sink, **options)  # type: ignore[arg-type]
    return restore


def test_a_blocked_writer_drops_lines_and_counts_them() -> None:
    """stderr blocked (a full pipe): the queue stops at its bound instead of growing,
    and once the writer can write again one warning says how many lines were dropped."""
    import io
    import threading

    class Blocked(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.open = threading.Event()

        def write(self, text: str) -> int:
            self.open.wait(10)
            return super().write(text)

    sink = Blocked()
    restore = _configured(sink, fmt="text", max_queued=5)
    try:
        for n in range(50):
            logging.getLogger("faregate.test").info("line %d", n)
        sink.open.set()
        logs.stop()
    finally:
        restore()
    written = re.findall(r"faregate\.test: line \d+", sink.getvalue())
    reported = re.findall(r"WARNING faregate\.logs: (\d+) log line\(s\) dropped", sink.getvalue())
    assert len(written) <= 6, "at most the bound, and the one the writer held"
    assert len(reported) == 1 and len(written) + int(reported[0]) == 50


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_line_times_are_loggings_own_across_seconds(fmt: str) -> None:
    # the time text is kept for a second: a line of the next second must not reuse it
    made = logs.formatter(fmt)
    plain = logging.Formatter()
    for created in (1_700_000_000.25, 1_700_000_000.75, 1_700_000_001.5, 1_700_000_000.125):
        record = logging.LogRecord("faregate", logging.INFO, "", 0, "x", None, None)
        record.created, record.msecs = created, (created % 1) * 1000
        assert made.formatTime(record) == plain.formatTime(record)
