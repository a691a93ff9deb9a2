"""What the OpenAI ⇄ Anthropic conversion sends upstream (issue 9, items 4 to 6): the
output bound's field name, a conversation of system turns only, tool schemas without
``type``. The fake upstreams validate every body against the vendors' request schemas."""

from __future__ import annotations

import anthropic
import openai
import pytest

from faregate.api import GatewayError
from faregate_adapter_anthropic import requests
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_openai import requests as oai_requests

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CLAUDE = "claude-sonnet-4-5"
GPT = "gpt-4o-mini"


# ---- 4: Anthropic → OpenAI sends max_completion_tokens --------------------------------------


def test_openai_bodies_carry_max_completion_tokens():
    body = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}],
            "thinking": {"type": "enabled", "budget_tokens": 2048}}
    out = oai_requests.render_request(requests.parse_request(body), "m")
    assert out["max_completion_tokens"] == 64 and "max_tokens" not in out
    assert out["reasoning_effort"] == "low"
    # a vendor that only knows the old name can still ask for it
    legacy = oai_requests.render_request(requests.parse_request(body), "m", max_tokens_field="max_tokens")
    assert legacy["max_tokens"] == 64 and "max_completion_tokens" not in legacy


async def test_messages_client_on_openai_channel_sends_max_completion_tokens(fake_openai, gateway, admin):
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT)
    key = await admin.add_token(remain_quota=50_000_000)
    async with anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=key, max_retries=0) as client:
        await client.messages.create(model=GPT, max_tokens=77, messages=[{"role": "user", "content": "hi"}])
        async with client.messages.stream(model=GPT, max_tokens=78,
                                          messages=[{"role": "user", "content": "hi"}]) as stream:
            await stream.get_final_message()
    for sent, bound in zip((r["json"] for r in fake_openai.requests), (77, 78), strict=True):
        assert sent["max_completion_tokens"] == bound and "max_tokens" not in sent


# ---- 5: only system / developer messages -------------------------------------------------


def test_system_only_conversation_is_a_400_before_upstream():
    body = {"model": "m", "messages": [{"role": "system", "content": "a"}, {"role": "developer", "content": "b"}]}
    with pytest.raises(GatewayError) as info:
        requests.render_request(oai_requests.parse_request(body), "m")
    assert info.value.status == 400 and info.value.param == "messages"


@pytest.mark.parametrize("stream", [False, True])
async def test_system_only_chat_on_anthropic_channel(fake_anthropic, gateway, admin, stream):
    await admin.add_channel(base_url=fake_anthropic.base_url, models=CLAUDE, type=14, key=FAKE_ANTHROPIC_KEY)
    key = await admin.add_token(remain_quota=50_000_000)
    async with openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0) as client:
        with pytest.raises(openai.BadRequestError) as info:
            await client.chat.completions.create(model=CLAUDE, stream=stream, messages=[
                {"role": "system", "content": "be brief"}, {"role": "developer", "content": "in French"}])
    err = info.value
    assert err.status_code == 400 and err.param == "messages"
    assert err.type == "invalid_request_error"
    assert fake_anthropic.requests == []  # never sent upstream


# ---- 6: function parameters without "type" -------------------------------------------------


@pytest.mark.parametrize(("parameters", "schema"), [
    ({"properties": {"city": {"type": "string"}}}, {"type": "object", "properties": {"city": {"type": "string"}}}),
    (None, {"type": "object", "properties": {}}),
    ({}, {"type": "object", "properties": {}}),
])
def test_input_schema_always_has_type_object(parameters, schema):
    fn: dict = {"name": "get"}
    if parameters is not None:
        fn["parameters"] = parameters
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": fn}]}
    out = requests.render_request(oai_requests.parse_request(body), "m")
    assert out["tools"][0]["input_schema"] == schema
    assert parameters is None or "type" not in parameters  # the client's dict is not changed


def test_non_object_parameters_are_a_400():
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "get", "parameters": {"type": "string"}}}]}
    with pytest.raises(GatewayError) as info:
        requests.render_request(oai_requests.parse_request(body), "m")
    assert info.value.status == 400


async def test_untyped_parameters_reach_anthropic_as_object(fake_anthropic, gateway, admin):
    await admin.add_channel(base_url=fake_anthropic.base_url, models=CLAUDE, type=14, key=FAKE_ANTHROPIC_KEY)
    key = await admin.add_token(remain_quota=50_000_000)
    async with openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0) as client:
        reply = await client.chat.completions.create(
            model=CLAUDE, messages=[{"role": "user", "content": "call tool"}],
            tools=[{"type": "function", "function": {"name": "get_weather",
                                                     "parameters": {"properties": {"city": {"type": "string"}}}}}])
    assert reply.choices[0].message.tool_calls
    sent = fake_anthropic.requests[-1]["json"]
    assert sent["tools"][0]["input_schema"] == {"type": "object", "properties": {"city": {"type": "string"}}}
