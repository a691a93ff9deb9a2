"""The Responses API on the channel types of other plugins (issue 12: "Responses clients reach
every channel type through the canonical model"): Gemini (24), Cohere (34) and Dify (37)
channels on their fakes, which validate what they receive against each vendor's published
schema. The official ``openai`` SDK with strict response validation is the client; every
answer and stream event is checked against OpenAI's schema, every bill against the
consume log. (OpenAI, Anthropic and chat-only channels: tests/test_relay_responses.py;
Bedrock: plugins/adapters/bedrock/tests/test_sdk.py.)"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import openai
import pytest

from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs
from faregate_adapter_cohere.provider import COHERE_CHANNEL_TYPE
from faregate_adapter_cohere.testing import CHAT_MODEL as COHERE_MODEL
from faregate_adapter_cohere.testing import REPLY_PREFIX as COHERE_REPLY
from faregate_adapter_cohere.testing import FakeCohere
from faregate_adapter_cohere.testing.fixtures import FAKE_COHERE_KEY
from faregate_adapter_dify.provider import DIFY_CHANNEL_TYPE
from faregate_adapter_dify.testing import APP_MODEL as DIFY_MODEL
from faregate_adapter_dify.testing import REPLY_PREFIX as DIFY_REPLY
from faregate_adapter_dify.testing import FakeDify
from faregate_adapter_dify.testing.fixtures import FAKE_DIFY_KEY
from faregate_adapter_gemini.testing import FLASH, FakeGemini
from faregate_adapter_gemini.testing import REPLY_PREFIX as GEMINI_REPLY
from faregate_adapter_gemini.testing.fixtures import FAKE_GEMINI_KEY
from faregate_adapter_openai.testing.schema import validate

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the SDK warns about model names


@dataclass(frozen=True)
class Kind:
    """A channel type under test: its fake, model, key and reply, and the upstream path of a
    regular and of a streamed answer."""

    fake: Any
    channel_type: int
    model: str
    key: str
    reply: str
    paths: tuple[str, str]


KINDS = {
    "gemini": Kind(FakeGemini, 24, FLASH, FAKE_GEMINI_KEY, GEMINI_REPLY,
                   (f"/v1beta/models/{FLASH}:generateContent", f"/v1beta/models/{FLASH}:streamGenerateContent")),
    "cohere": Kind(FakeCohere, COHERE_CHANNEL_TYPE, COHERE_MODEL, FAKE_COHERE_KEY, COHERE_REPLY,
                   ("/v2/chat", "/v2/chat")),
    "dify": Kind(FakeDify, DIFY_CHANNEL_TYPE, DIFY_MODEL, FAKE_DIFY_KEY, DIFY_REPLY,
                 ("/v1/chat-messages", "/v1/chat-messages")),
}


def check_events(events: list[Any]) -> None:
    """Each event valid against OpenAI's spec, sequence numbers 0, 1, 2 …"""
    for n, event in enumerate(events):
        data = event.to_dict()
        validate("ResponseStreamEvent", data)
        assert data["sequence_number"] == n, (n, data)


@pytest.mark.parametrize("name", sorted(KINDS))
async def test_responses_regular_and_streamed(name: str, gateway: GatewayServer, admin: AdminClient) -> None:
    kind = KINDS[name]
    async with kind.fake(key=kind.key) as fake:  # only this test's vendor is started
        await responses_regular_and_streamed(name, kind, fake, gateway, admin)
        assert not fake.violations, fake.violations  # every request valid against the vendor's schema


async def responses_regular_and_streamed(name: str, kind: Kind, fake: Any, gateway: GatewayServer,
                                         admin: AdminClient) -> None:
    await admin.set_option("ModelRatio", {kind.model: 1.0})
    await admin.set_option("CompletionRatio", {kind.model: 2.0})
    await admin.add_channel(base_url=fake.base_url, type=kind.channel_type, key=kind.key, models=kind.model,
                            name=name)
    async with openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0,
                                  _strict_response_validation=True) as client:
        raw = await client.responses.with_raw_response.create(model=kind.model, input="hello there",
                                                              instructions="Answer briefly.", max_output_tokens=200)
        resp = raw.parse()  # the SDK's strict validation
        validate("Response", raw.http_response.json())
        assert resp.output_text == kind.reply + "hello there"
        assert resp.status == "completed" and resp.model == kind.model and resp.instructions == "Answer briefly."
        assert fake.requests[-1]["path"] == kind.paths[0]
        sent = json.dumps(fake.requests[-1]["json"])
        assert "Answer briefly." in sent and "hello there" in sent  # instructions went up as the system prompt

        stream = await client.responses.create(model=kind.model, input="stream it back", stream=True)
        events = [event async for event in stream]
    check_events(events)
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    for event_type in ("response.output_item.added", "response.content_part.added", "response.output_text.done",
                       "response.content_part.done", "response.output_item.done"):
        assert event_type in kinds, event_type
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == kind.reply + "stream it back"
    final = events[-1].response
    assert final.output_text == text and final.usage is not None
    assert fake.requests[-1]["path"] == kind.paths[1]

    regular, streamed = await consume_logs(gateway)
    assert resp.usage is not None
    for row, usage, is_stream in ((regular, resp.usage, False), (streamed, final.usage, True)):
        assert (row.model_name, row.is_stream) == (kind.model, is_stream)
        assert (row.prompt_tokens, row.completion_tokens) == (usage.input_tokens, usage.output_tokens)
        assert row.quota == max(1, round(usage.input_tokens + usage.output_tokens * 2.0))
        assert json.loads(row.other)["usage_source"] == "upstream"
