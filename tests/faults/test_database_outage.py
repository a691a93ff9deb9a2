"""The database fails under a running gateway when a request needs it (its quota lease):
the request is answered 503 ``db_unavailable`` in the client's own format (Anthropic's:
529 ``overloaded_error``, the status its SDK knows), is never relayed without a
reservation, and the log line says why in the driver's words, with the DSN's password
masked (drivers put their connection parameters in their messages)."""

from __future__ import annotations

import io
import json
import logging
import sys

import anthropic
import openai
import pytest
from tortoise.exceptions import DBConnectionError

from faregate.billing import ledger
from faregate.observe import logs
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

DB_PASSWORD = "db-outage-pass-8431"
DSN = f"postgres://faregate:{DB_PASSWORD}@db.internal:5432/faregate"


async def _database_down(worker_id: str, kind: str, ref_id: int, need: int, ahead: int) -> int:
    try:
        raise ConnectionRefusedError(111, "Connect call failed ('10.0.0.5', 5432)")
    except ConnectionRefusedError as exc:
        raise DBConnectionError(f"cannot connect to {DSN}") from exc


async def test_a_database_outage_is_a_503_in_the_clients_format_and_a_logged_cause(
        gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o-mini")
    key = await admin.add_token()
    monkeypatch.setattr(ledger, "lease_from_db", _database_down)
    sink = io.StringIO()
    saved = logging.getLogger().handlers[:], logging.getLogger().level, sys.excepthook
    logs.configure("info", "json", stream=sink, secrets=[DB_PASSWORD])  # as `faregate serve` does
    try:
        chat = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
        with pytest.raises(openai.APIStatusError) as openai_error:
            await chat.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        messages = anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=key, max_retries=0)
        with pytest.raises(anthropic.OverloadedError) as anthropic_error:
            await messages.messages.create(model="gpt-4o-mini", max_tokens=16,
                                           messages=[{"role": "user", "content": "hi"}])
        logs.stop()
    finally:
        logs.stop()
        root = logging.getLogger()
        root.handlers, root.level = saved[0], saved[1]
        sys.excepthook = saved[2]
        logging.captureWarnings(False)
    assert fake_openai.requests == [], "nothing relayed without a reservation"
    assert openai_error.value.status_code == 503
    assert openai_error.value.body["code"] == "db_unavailable"  # type: ignore[index]
    body = anthropic_error.value.response.json()
    assert body["type"] == "error" and body["error"]["type"] == "overloaded_error"
    assert "database" in body["error"]["message"]

    text = sink.getvalue()
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    failed = [r for r in records if r["level"] == "ERROR" and "db_unavailable" in r["message"]]
    assert len(failed) == 2, records
    for record in failed:
        # the cause in the line itself: what failed, where, and the root cause below it
        assert "DBConnectionError: cannot connect to postgres://faregate:***@db.internal:5432/faregate" in (
            record["message"]), record["message"]
        assert "(cause: ConnectionRefusedError: [Errno 111] Connect call failed" in record["message"]
        assert record["request_id"] and "Traceback" in record["exc_info"]
    assert DB_PASSWORD not in text and key.removeprefix("sk-") not in text
