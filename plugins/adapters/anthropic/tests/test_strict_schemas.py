"""Strict schemas on both sides of the gateway (issue 9, item 9 and the fakes' habit):
Messages the gateway builds by conversion, whole or streamed, validate against
Anthropic's published response schemas; the fake providers validate every request
against the vendors' request schemas, answer 400 and record the violation."""

from __future__ import annotations

import json

import httpx
import pytest

from faregate_adapter_anthropic.testing import FakeAnthropic
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_anthropic.testing.schema import (
    validate_create_message,
    validate_error,
    validate_message,
    validate_stream_event,
)
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.schema import validate_error as validate_openai_error

GPT = "gpt-4o-mini"
TOOL = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
HEADERS = {"anthropic-version": "2023-06-01"}


def sse_events(text: str) -> list[dict]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


@pytest.fixture
async def http(gateway, admin, fake_openai):
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT)
    key = await admin.add_token(remain_quota=50_000_000)
    async with httpx.AsyncClient(base_url=gateway.base_url, headers={**HEADERS, "x-api-key": key},
                                 timeout=30) as client:
        yield client


@pytest.mark.parametrize("prompt", ["hello", "call tool"])
async def test_converted_messages_satisfy_the_strict_schema(http, prompt):
    body = {"model": GPT, "max_tokens": 200, "messages": [{"role": "user", "content": prompt}], "tools": [TOOL]}
    whole = (await http.post("/v1/messages", json=body)).json()
    validate_message(whole)
    usage = whole["usage"]
    assert usage["cache_creation"] == {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}
    assert whole["stop_details"] is None and whole["container"] is None
    assert all(b["citations"] is None for b in whole["content"] if b["type"] == "text")

    resp = await http.post("/v1/messages", json={**body, "stream": True})
    events = sse_events(resp.text)
    for event in events:
        validate_stream_event(event)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    started = events[0]["message"]
    validate_message(started)
    # a stream's message_start carries the same usage fields (cache ones included) as a body
    assert set(started["usage"]) == set(usage)
    assert events[-2]["usage"]["output_tokens"] == usage["output_tokens"]


async def test_converted_errors_satisfy_the_error_schema(http):
    resp = await http.post("/v1/messages", json={"model": "no-such", "max_tokens": 5,
                                                 "messages": [{"role": "user", "content": "x"}]})
    assert resp.status_code == 404
    validate_error(resp.json())


# ---- the fakes judge what they receive -----------------------------------------------------


async def test_fake_anthropic_refuses_and_records_schema_violations():
    async with FakeAnthropic(key=FAKE_ANTHROPIC_KEY) as fake, httpx.AsyncClient(base_url=fake.base_url) as client:
        headers = {**HEADERS, "x-api-key": FAKE_ANTHROPIC_KEY}
        good = {"model": "claude-sonnet-4-5", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
        ok = await client.post("/v1/messages", json=good, headers=headers)
        assert ok.status_code == 200 and fake.violations == []
        validate_message(ok.json())  # the fake answers what the live API does, field for field
        for event in sse_events((await client.post("/v1/messages", json={**good, "stream": True},
                                                   headers=headers)).text):
            validate_stream_event(event)

        bad = {**good, "reasoning_effort": "high", "tools": [{"name": "f", "input_schema": {"properties": {}}}]}
        resp = await client.post("/v1/messages", json=bad, headers=headers)
        assert resp.status_code == 400
        assert validate_error(resp.json())["error"]["type"] == "invalid_request_error"
        assert len(fake.violations) == 1 and fake.violations[0]["json"] == bad
        with pytest.raises(Exception):  # noqa: B017 - jsonschema's ValidationError
            validate_create_message(bad)


async def test_fake_anthropic_records_violations_even_under_a_fault():
    async with FakeAnthropic() as fake, httpx.AsyncClient(base_url=fake.base_url) as client:
        fake.fail_next(529, "busy")
        resp = await client.post("/v1/messages", json={"model": "m", "messages": []}, headers=HEADERS)
        assert resp.status_code == 529 and len(fake.violations) == 1


async def test_fake_openai_refuses_and_records_schema_violations():
    async with FakeOpenAI() as fake, httpx.AsyncClient(base_url=fake.base_url) as client:
        good = {"model": GPT, "messages": [{"role": "user", "content": "hi"}]}
        assert (await client.post("/v1/chat/completions", json=good)).status_code == 200
        assert fake.violations == []
        bad = {**good, "reasoning_effort": "max"}
        resp = await client.post("/v1/chat/completions", json=bad)
        assert resp.status_code == 400
        assert validate_openai_error(resp.json())["error"]["type"] == "invalid_request_error"
        assert fake.violations and fake.violations[0]["json"] == bad
