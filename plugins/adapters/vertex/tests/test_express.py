"""A Vertex channel with an API key (express mode): Google's models at
``/v1/publishers/google/models/…`` on the global endpoint, the key in ``x-goog-api-key``
(never in the URL), no token exchange; Claude models need a project (the setting
``vertex_project``), without one the channel says so and no call goes out."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from faregate.testing.logs import consume_logs
from faregate_adapter_gemini.testing import REPLY_PREFIX as GEMINI_REPLY
from faregate_adapter_vertex.testing import API_KEY

from .conftest import CLAUDE, GEMINI


async def test_genai_sdk_through_an_express_channel(express: Any) -> None:
    client = express.genai()
    reply = await client.aio.models.generate_content(model=GEMINI, contents="express")
    assert reply.text == GEMINI_REPLY + "express"
    chunks = [c async for c in await client.aio.models.generate_content_stream(model=GEMINI, contents="fast")]
    assert "".join(c.text or "" for c in chunks) == GEMINI_REPLY + "fast"
    first, second = express.fake.requests
    assert first["path"] == f"/v1/publishers/google/models/{GEMINI}:generateContent" and first["query"] == {}
    assert second["query"] == {"alt": "sse"}
    for sent in (first, second):
        assert sent["headers"]["x-goog-api-key"] == API_KEY and "authorization" not in sent["headers"]
    assert express.oauth.token_requests == 0
    assert len(await consume_logs(express.server)) == 2


async def test_claude_needs_a_project_with_an_api_key(express: Any) -> None:
    client = express.openai()
    with pytest.raises(openai.APIStatusError) as refused:
        await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "hi"}])
    assert refused.value.status_code == 503 and "vertex_project" in refused.value.message
    assert express.fake.requests == []
    setting = json.dumps({"vertex_project": express.fake.project})
    await express.admin.ok("PUT", "/api/channel/", json={"id": express.channel, "other": "us-east5",
                                                         "setting": setting})
    reply = await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content
    (sent,) = express.fake.requests
    assert sent["path"].startswith(f"/v1/projects/{express.fake.project}/locations/us-east5/publishers/anthropic/")
