"""A realtime session never carries the client's API key upstream nor the channel's key
back: the upstream WebSocket is dialed with the channel's key alone (whatever form the
client's key came in), and an upstream that echoes its credential (in a session's
instructions, in an error event) has it redacted in every frame the client gets, and in
the logs."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import websockets

from faregate.testing.harness import AdminClient
from faregate_adapter_openai.testing import FakeOpenAI

# not shaped like any known key: only verbatim redaction of the channel's keys catches it
CHANNEL_KEY = "Zq8realtimeChannelSecret9f3kWm"


@pytest.mark.parametrize("form", ["header", "subprotocol"])
async def test_no_key_crosses_the_gateway(make_gateway: Any, caplog: pytest.LogCaptureFixture, form: str) -> None:
    caplog.set_level(logging.DEBUG)
    async with FakeOpenAI(key=CHANNEL_KEY) as upstream:
        upstream.realtime.echo_key = True
        server = await make_gateway(plugins=["faregate-adapter-openai"])
        admin = AdminClient(server.base_url)
        await admin.setup_root()
        await admin.add_channel(base_url=upstream.base_url, models="gpt-realtime", key=CHANNEL_KEY)
        await admin.set_option("ModelRatio", {"gpt-realtime": 2})
        key = await admin.add_token()
        await admin.close()
        url = server.base_url.replace("http://", "ws://") + "/v1/realtime?model=gpt-realtime"
        options: dict[str, Any] = ({"additional_headers": {"Authorization": f"Bearer {key}"}} if form == "header"
                                   else {"subprotocols": ["realtime", f"openai-insecure-api-key.{key}"]})
        frames: list[str] = []
        async with websockets.connect(url, **options) as ws:
            handshake = str(ws.response.headers)
            while len(frames) < 2:  # session.created, then the upstream's error event
                frames.append(str(await ws.recv()))
            await ws.send(json.dumps({"type": "input_audio_buffer.clear"}))
            frames.append(str(await ws.recv()))
        created, error = json.loads(frames[0]), json.loads(frames[1])
        assert created["session"]["instructions"] == "You were called with Bearer [REDACTED]"
        assert error["type"] == "error" and "[REDACTED]" in error["error"]["message"]
        for text in (*frames, handshake):
            assert CHANNEL_KEY not in text and key not in text and key.removeprefix("sk-") not in text
        # upstream: the channel's key, never the client's, in any header, the query or an event
        (session,) = upstream.realtime.sessions
        assert session.headers["authorization"] == f"Bearer {CHANNEL_KEY}"
        seen_upstream = json.dumps([session.headers, session.query, session.events])
        assert key.removeprefix("sk-") not in seen_upstream
        assert "sec-websocket-protocol" not in session.headers
        for record in caplog.records:
            message = record.getMessage()
            assert CHANNEL_KEY not in message and key.removeprefix("sk-") not in message, message
