"""An upstream that echoes the channel key in its error text must not leak it to
callers or logs (issue 8, #6): upstream messages are passed on redacted, upstream 5xx
and auth failures get a neutral message, the full (redacted) text stays in the
operator's error log."""

from __future__ import annotations

import logging

import httpx
import pytest

from faregate.testing.harness import AdminClient
from faregate.testing.logs import error_logs
from faregate_adapter_openai.testing import FakeOpenAI

# not shaped like any known key: only verbatim redaction of the channel's keys catches it
CHANNEL_KEY = "Zq8channelSecret9f3kWm"


@pytest.mark.parametrize("status,neutral", [(400, False), (401, True), (403, True), (429, False), (500, True),
                                            (503, True)])
async def test_channel_key_never_reaches_clients_or_logs(make_gateway, caplog: pytest.LogCaptureFixture,
                                                         status: int, neutral: bool) -> None:
    caplog.set_level(logging.DEBUG)
    async with FakeOpenAI(key=CHANNEL_KEY) as upstream:
        server = await make_gateway(plugins=["faregate-adapter-openai"])
        admin = AdminClient(server.base_url)
        await admin.setup_root()
        await admin.set_option("RetryTimes", "0")
        await admin.add_channel(base_url=upstream.base_url, models="gpt-4o", key=CHANNEL_KEY)
        key = await admin.add_token()
        upstream.fail_next(status, f"Incorrect API key provided: {CHANNEL_KEY}. You can find your key at ...")
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                                   json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
        await admin.close()
        assert resp.status_code == status
        message = resp.json()["error"]["message"]
        assert CHANNEL_KEY not in resp.text
        assert ("Incorrect API key provided" in message) is not neutral
        assert "request id" in message
        (row,) = await error_logs(server)
        assert "Incorrect API key provided: [REDACTED]" in row.content and CHANNEL_KEY not in row.content
        for record in caplog.records:
            assert CHANNEL_KEY not in record.getMessage(), record.getMessage()
        assert any("Incorrect API key provided: [REDACTED]" in r.getMessage() for r in caplog.records), \
            "the operator's server log has the redacted upstream text"


def test_key_shaped_strings_are_redacted_without_knowing_the_key() -> None:
    from faregate.errors import upstream_error

    err = upstream_error(401, b'{"error": {"message": "bad key sk-proj-abcdefghijklmnop1234"}}')
    assert "abcdefghijklmnop1234" not in err.message
