"""A Gemini client's key in the URL (``?key=``) never reaches a log line, a log row or an
answer: the request log names the route template, log rows the path without its query,
errors never echo a presented key, the upstream gets the channel key in a header (not the
URL), and any line that does carry a ``key=`` query (Hypercorn's access log, with a format
that includes the query) is redacted on its way to the sink."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from hypercorn.logging import AccessLogAtoms

from faregate.security.redact import RedactingFilter
from faregate.testing.harness import AdminClient
from faregate.testing.logs import consume_logs, error_logs
from faregate_adapter_gemini.testing import FLASH, FakeGemini

CHANNEL_KEY = "AIzaChannelSecretKey0123456789abcdef"  # not sk- shaped: only verbatim redaction would catch it
WRONG_KEY = "AIzaWrongPresentedKey0123456789abcdef"


def sink_text(record: logging.LogRecord) -> str:
    """The record as the process's sink writes it (the redacting filter applied)."""
    RedactingFilter().filter(record)
    return record.getMessage()


async def test_a_key_in_the_query_never_reaches_logs_rows_or_answers(make_gateway, caplog: pytest.LogCaptureFixture
                                                                     ) -> None:
    caplog.set_level(logging.DEBUG)
    async with FakeGemini(key=CHANNEL_KEY) as upstream:
        server = await make_gateway(plugins=["faregate-adapter-gemini"])
        admin = AdminClient(server.base_url)
        await admin.setup_root()
        await admin.set_option("ModelRatio", {FLASH: 0.15})
        await admin.set_option("RetryTimes", "0")
        await admin.add_channel(base_url=upstream.base_url, type=24, models=FLASH, key=CHANNEL_KEY)
        key = await admin.add_token()
        body = {"contents": [{"parts": [{"text": "hi"}]}]}
        path = f"/v1beta/models/{FLASH}:generateContent"
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            ok = await http.post(path, params={"key": key}, json=body)
            stream = await http.post(f"/v1/models/{FLASH}:streamGenerateContent", params={"key": key, "alt": "sse"},
                                     json=body)
            wrong = await http.post(path, params={"key": WRONG_KEY}, json=body)
            listed = await http.get("/v1beta/models", params={"key": key, "pageSize": "1"})
            upstream.fail_next(400, f"bad request for key {CHANNEL_KEY}")
            failed = await http.post(path, params={"key": key}, json=body)
        await admin.close()
    assert (ok.status_code, stream.status_code, wrong.status_code, listed.status_code, failed.status_code) == (
        200, 200, 401, 200, 400)
    for resp in (ok, stream, wrong, listed, failed):
        for secret in (key, key.removeprefix("sk-"), WRONG_KEY, CHANNEL_KEY):
            assert secret not in resp.text
    for sent in upstream.requests:
        assert "key" not in sent["query"] and sent["headers"]["x-goog-api-key"] == CHANNEL_KEY
    rows = [*await consume_logs(server), *await error_logs(server)]
    assert len(rows) == 3  # two answers billed, the upstream error recorded (the wrong key: no row)
    for row in rows:
        stored = json.dumps([row.content, row.other, row.token_name])
        assert "key=" not in stored and key.removeprefix("sk-") not in stored and CHANNEL_KEY not in stored
        assert "?" not in json.loads(row.other)["request_path"]
    requests = [r for r in caplog.records if r.name == "faregate.request"]
    assert len(requests) >= 5 and all("{model}" in r.getMessage() for r in requests if "/models/" in r.getMessage())
    for record in caplog.records:
        line = sink_text(record)
        for secret in (key.removeprefix("sk-"), WRONG_KEY, CHANNEL_KEY):
            assert secret not in line, line


@pytest.mark.parametrize("fmt", ['%(h)s "%(R)s" %(s)s', "%(m)s %(Uq)s %(q)s"])
def test_an_access_log_line_with_the_query_is_redacted(fmt: str) -> None:
    scope = {"type": "http", "http_version": "1.1", "method": "POST", "scheme": "http", "client": ("10.0.0.1", 5),
             "path": f"/v1beta/models/{FLASH}:generateContent",
             "query_string": f"alt=sse&key={WRONG_KEY}".encode(), "headers": []}
    atoms = AccessLogAtoms(scope, {"status": 200, "headers": []}, 0.01)  # type: ignore[arg-type]
    record = logging.LogRecord("hypercorn.access", logging.INFO, __file__, 1, fmt, (atoms,), None)
    assert WRONG_KEY in record.getMessage()  # the raw line would carry it
    line = sink_text(record)
    assert WRONG_KEY not in line and "key=[REDACTED]" in line
