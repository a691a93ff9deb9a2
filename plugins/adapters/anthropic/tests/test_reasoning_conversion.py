"""Reasoning and structured output across the OpenAI ⇄ Anthropic conversion (issue 9,
items 3 and 11): ``reasoning_effort: "none"``, thinking budgets inside the client's
output bound, and Anthropic's output_config / adaptive thinking / tool ``strict`` on an
OpenAI channel. The fake upstreams validate what the gateway sends against the vendors'
request schemas (the fixtures fail the test on a violation)."""

from __future__ import annotations

import anthropic
import openai
import pytest

from faregate.api import GatewayError
from faregate_adapter_anthropic import requests, thinking
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_openai import requests as oai_requests

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CLAUDE = "claude-sonnet-4-5"
GPT = "gpt-4o-mini"
USER = [{"role": "user", "content": "think"}]


def anthropic_from_openai(body: dict) -> dict:
    return requests.render_request(oai_requests.parse_request(body), body["model"])


def openai_from_anthropic(body: dict) -> dict:
    return oai_requests.render_request(requests.parse_request(body), body["model"])


# ---- OpenAI → Anthropic: reasoning_effort and the output bound ---------------------------


@pytest.mark.parametrize("bound", [None, 100, 50_000])
def test_reasoning_effort_none_means_no_thinking(bound):
    body = {"model": "m", "messages": USER, "reasoning_effort": "none"}
    if bound is not None:
        body["max_completion_tokens"] = bound
    out = anthropic_from_openai(body)
    assert "thinking" not in out
    assert out["max_tokens"] == (bound or requests.DEFAULT_MAX_TOKENS)


def test_budget_is_never_added_to_the_clients_bound():
    out = anthropic_from_openai({"model": "m", "messages": USER, "reasoning_effort": "medium",
                                 "max_completion_tokens": 100})
    # 100 tokens cannot hold Anthropic's smallest budget (1024): thinking off, bound kept
    assert out["max_tokens"] == 100 and "thinking" not in out
    out = anthropic_from_openai({"model": "m", "messages": USER, "reasoning_effort": "high",
                                 "max_completion_tokens": 5000})
    # 24576 does not fit in 5000: shrunk to half the bound, the rest is the answer's
    assert out["max_tokens"] == 5000 and out["thinking"] == {"type": "enabled", "budget_tokens": 2500}
    out = anthropic_from_openai({"model": "m", "messages": USER, "reasoning_effort": "low",
                                 "max_completion_tokens": 1500})
    assert out["max_tokens"] == 1500 and out["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def test_without_a_client_bound_the_default_makes_room():
    out = anthropic_from_openai({"model": "m", "messages": USER, "reasoning_effort": "medium"})
    budget = out["thinking"]["budget_tokens"]
    assert budget == 8192 and out["max_tokens"] == requests.DEFAULT_MAX_TOKENS + budget


@pytest.mark.parametrize(("bound", "budget"), [(1024, None), (1025, 1024), (4000, 2000), (9000, 8192)])
def test_fit_budget_keeps_anthropics_rule(bound, budget):
    got, max_tokens = thinking.fit_budget(8192, bound, client_bound=True)
    assert (got, max_tokens) == (budget, bound)
    if got is not None:
        assert thinking.MIN_THINKING_BUDGET <= got < max_tokens


async def test_reasoning_none_through_the_gateway(fake_anthropic, gateway, admin):
    await admin.add_channel(base_url=fake_anthropic.base_url, models=CLAUDE, type=14, key=FAKE_ANTHROPIC_KEY)
    key = await admin.add_token(remain_quota=50_000_000)
    async with openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0) as client:
        reply = await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "hi"}],
                                                     reasoning_effort="none", max_completion_tokens=100)
        assert reply.choices[0].message.content
        sent = fake_anthropic.requests[-1]["json"]
        assert sent["max_tokens"] == 100 and "thinking" not in sent
        await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "hi"}],
                                             reasoning_effort="low", max_completion_tokens=3000)
        sent = fake_anthropic.requests[-1]["json"]
        assert sent["max_tokens"] == 3000 and sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}


# ---- Anthropic → OpenAI: output_config, adaptive thinking, tool strict ---------------------


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
          "additionalProperties": False}


def test_output_config_format_becomes_response_format():
    out = openai_from_anthropic({"model": "m", "max_tokens": 50, "messages": USER,
                                 "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}})
    assert out["response_format"] == {"type": "json_schema", "json_schema": {
        "name": thinking.SCHEMA_NAME, "schema": SCHEMA, "strict": True}}


@pytest.mark.parametrize(("body", "effort"), [
    ({"thinking": {"type": "adaptive"}}, "high"),  # Anthropic's default effort
    ({"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}}, "low"),
    ({"output_config": {"effort": "medium"}}, "medium"),
    ({"output_config": {"effort": "max"}}, "xhigh"),  # above OpenAI's top level: its top level
    ({"thinking": {"type": "enabled", "budget_tokens": 20000}}, "high"),
])
def test_adaptive_thinking_and_effort_become_reasoning_effort(body, effort):
    out = openai_from_anthropic({"model": "m", "max_tokens": 50000, "messages": USER, **body})
    assert out["reasoning_effort"] == effort
    assert out["max_completion_tokens"] == 50000 and "max_tokens" not in out


def test_thinking_disabled_sends_no_reasoning_effort():
    out = openai_from_anthropic({"model": "m", "max_tokens": 50, "messages": USER,
                                 "thinking": {"type": "disabled"}})
    assert "reasoning_effort" not in out


def test_tool_strict_is_kept():
    tool = {"name": "get", "input_schema": SCHEMA, "strict": True}
    out = openai_from_anthropic({"model": "m", "max_tokens": 50, "messages": USER, "tools": [tool]})
    assert out["tools"][0]["function"] == {"name": "get", "parameters": SCHEMA, "strict": True}
    # and the other way: OpenAI's strict reaches Anthropic's tool
    back = anthropic_from_openai({"model": "m", "messages": USER, "tools": [
        {"type": "function", "function": {"name": "get", "parameters": SCHEMA, "strict": True}}]})
    assert back["tools"][0]["strict"] is True


@pytest.mark.parametrize(("extra", "param"), [
    ({"output_config": {"format": {"type": "xml"}}}, "output_config.format"),
    ({"output_config": {"effort": "extreme"}}, "output_config.effort"),
    ({"thinking": {"type": "sometimes"}}, "thinking.type"),
])
def test_what_openai_cannot_express_is_a_400(extra, param):
    with pytest.raises(GatewayError) as info:
        requests.parse_request({"model": "m", "max_tokens": 50, "messages": USER, **extra})
    assert info.value.status == 400 and info.value.param == param


async def test_structured_output_and_effort_through_the_gateway(fake_openai, gateway, admin):
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT)
    key = await admin.add_token(remain_quota=50_000_000)
    async with anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=key, max_retries=0) as client:
        await client.messages.create(
            model=GPT, max_tokens=2000, messages=[{"role": "user", "content": "weather?"}],
            tools=[{"name": "get_weather", "input_schema": SCHEMA, "strict": True}],
            extra_body={"thinking": {"type": "adaptive"},
                        "output_config": {"effort": "low", "format": {"type": "json_schema", "schema": SCHEMA}}})
        sent = fake_openai.requests[-1]["json"]
        assert sent["reasoning_effort"] == "low"
        assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
        assert sent["tools"][0]["function"]["strict"] is True
        assert sent["max_completion_tokens"] == 2000 and "max_tokens" not in sent

        with pytest.raises(anthropic.BadRequestError) as info:
            await client.messages.create(model=GPT, max_tokens=20, messages=[{"role": "user", "content": "x"}],
                                         extra_body={"output_config": {"effort": "extreme"}})
        assert info.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
        assert len(fake_openai.requests) == 1  # refused before any upstream call
