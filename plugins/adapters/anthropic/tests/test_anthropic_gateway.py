"""End to end: the official ``anthropic`` and ``openai`` SDKs against a real gateway with
Anthropic (type 14, the fake Anthropic server) and OpenAI (type 1, the fake OpenAI
server) channels."""

from __future__ import annotations

import json

import anthropic
import httpx
import openai
import pytest

from faregate.testing.fake_server import Fault as SharedFault
from faregate.testing.logs import consume_logs, error_logs
from faregate_adapter_anthropic.testing import REPLY_PREFIX, TOOL_INPUT, Fault, signature_for
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the SDK warns about model names

CLAUDE = "claude-sonnet-4-5"
GPT = "gpt-4o-mini"
UPSTREAM_KEY = FAKE_ANTHROPIC_KEY  # what the fake_anthropic fixture accepts
WEATHER_TOOL = {"name": "get_weather", "description": "Weather for a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
OPENAI_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                                "parameters": WEATHER_TOOL["input_schema"]}}


_OPEN: list[anthropic.AsyncAnthropic | openai.AsyncOpenAI] = []


@pytest.fixture(autouse=True)
async def _close_clients(gateway):
    yield  # closed before the gateway stops: open keep-alive connections hold up its shutdown
    while _OPEN:
        await _OPEN.pop().close()  # before the loop closes, or their pools complain


def claude_client(gateway, key: str, **kwargs) -> anthropic.AsyncAnthropic:
    client = anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=key, max_retries=0,
                                      _strict_response_validation=True, **kwargs)
    _OPEN.append(client)
    return client


def openai_client(gateway, key: str) -> openai.AsyncOpenAI:
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
    _OPEN.append(client)
    return client


async def add_anthropic(admin, fake, models: str = CLAUDE, **fields) -> int:
    return await admin.add_channel(base_url=fake.base_url, models=models, type=14, key=UPSTREAM_KEY,
                                   name="anthropic", **fields)


# ---- Messages client → Anthropic channel (pass-through) ----------------------------------


async def test_messages_passthrough_regular_and_stream(fake_anthropic, gateway, admin):
    await add_anthropic(admin, fake_anthropic)
    key = await admin.add_token(remain_quota=50_000_000)
    client = claude_client(gateway, key, default_headers={"anthropic-beta": "prompt-caching-2024-07-31",
                                                          "anthropic-version": "2099-01-01"})
    reply = await client.messages.create(model=CLAUDE, max_tokens=256, system="Be brief.",
                                         messages=[{"role": "user", "content": "hello"}],
                                         metadata={"user_id": "u1"}, service_tier="auto")
    assert reply.content[0].text == REPLY_PREFIX + "hello" and reply.stop_reason == "end_turn"
    upstream = fake_anthropic.requests[-1]
    assert upstream["headers"]["x-api-key"] == UPSTREAM_KEY
    assert upstream["headers"]["anthropic-version"] == "2099-01-01"  # the client's, whatever it is
    assert upstream["headers"]["anthropic-beta"] == "prompt-caching-2024-07-31"
    # pass-through: the body the client sent, unchanged (Anthropic-only fields included)
    assert upstream["json"] == {"model": CLAUDE, "max_tokens": 256, "system": "Be brief.",
                                "messages": [{"role": "user", "content": "hello"}],
                                "metadata": {"user_id": "u1"}, "service_tier": "auto"}

    async with client.messages.stream(model=CLAUDE, max_tokens=256,
                                      messages=[{"role": "user", "content": "stream me"}]) as stream:
        text = "".join([t async for t in stream.text_stream])
        final = await stream.get_final_message()
    assert text == REPLY_PREFIX + "stream me" == final.content[0].text
    assert final.usage.output_tokens > 1
    rows = await consume_logs(gateway)
    assert len(rows) == 2
    assert rows[1].is_stream and rows[1].completion_tokens == final.usage.output_tokens
    assert rows[1].prompt_tokens == final.usage.input_tokens


async def test_messages_tools_and_thinking_multi_turn(fake_anthropic, gateway, admin):
    await add_anthropic(admin, fake_anthropic)
    client = claude_client(gateway, await admin.add_token(remain_quota=50_000_000))
    thinking = {"type": "enabled", "budget_tokens": 1024}
    messages = [{"role": "user", "content": "Please call tool for Paris"}]
    async with client.messages.stream(model=CLAUDE, max_tokens=2048, thinking=thinking, tools=[WEATHER_TOOL],
                                      messages=messages) as stream:
        first = await stream.get_final_message()
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    assert first.content[0].signature == signature_for(first.content[0].thinking)
    assert first.content[1].input == TOOL_INPUT and first.stop_reason == "tool_use"
    # the next turn carries the signed thinking block back (the fake checks signature and order)
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[1].id,
                                               "content": "sunny"}]}]
    second = await client.messages.create(model=CLAUDE, max_tokens=2048, thinking=thinking,
                                          tools=[WEATHER_TOOL], messages=messages)
    assert [b.type for b in second.content] == ["thinking", "text"] and second.stop_reason == "end_turn"


async def test_model_mapping_changes_only_the_model(fake_anthropic, gateway, admin):
    await add_anthropic(admin, fake_anthropic, models="claude-alias",
                        model_mapping=json.dumps({"claude-alias": CLAUDE}))
    await admin.set_option("ModelRatio", {"claude-alias": 1.5})
    client = claude_client(gateway, await admin.add_token(remain_quota=50_000_000))
    reply = await client.messages.create(model="claude-alias", max_tokens=64, extra_body={"temperature": 0.5},
                                         messages=[{"role": "user", "content": "x"}])
    assert reply.content[0].text == REPLY_PREFIX + "x"
    assert fake_anthropic.requests[-1]["json"] == {"model": CLAUDE, "max_tokens": 64, "temperature": 0.5,
                                                   "messages": [{"role": "user", "content": "x"}]}


# ---- Messages client → OpenAI channel -------------------------------------------------------


async def test_messages_client_on_openai_channel(fake_openai, gateway, admin):
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT)
    client = claude_client(gateway, await admin.add_token(remain_quota=50_000_000))
    reply = await client.messages.create(model=GPT, max_tokens=100, system=[{"type": "text", "text": "sys"}],
                                         messages=[{"role": "user", "content": "hello"}],
                                         thinking={"type": "enabled", "budget_tokens": 1024})
    assert reply.content[0].text.endswith("hello") and reply.stop_reason == "end_turn"
    assert reply.model == GPT and reply.usage.input_tokens > 0
    sent = fake_openai.requests[-1]["json"]
    assert sent["messages"][0] == {"role": "system", "content": "sys"}
    assert sent["max_completion_tokens"] == 100 and "max_tokens" not in sent and sent["reasoning_effort"] == "low"

    messages = [{"role": "user", "content": "call tool please"}]
    async with client.messages.stream(model=GPT, max_tokens=100, tools=[WEATHER_TOOL], messages=messages) as s:
        first = await s.get_final_message()
    assert [b.type for b in first.content] == ["tool_use"] and first.stop_reason == "tool_use"
    assert first.content[0].input == {"city": "Paris"} and first.content[0].name == "get_weather"
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": first.content[0].id, "content": "sunny",
                      "is_error": False},
                     {"type": "text", "text": "thanks"}]}]
    async with client.messages.stream(model=GPT, max_tokens=100, tools=[WEATHER_TOOL], messages=messages) as s:
        events = [ev.type async for ev in s]
        second = await s.get_final_message()
    assert second.content[0].text.endswith("thanks") and second.stop_reason == "end_turn"
    assert events[0] == "message_start" and events[-1] == "message_stop"
    sent = fake_openai.requests[-1]["json"]
    assert [msg["role"] for msg in sent["messages"]] == ["user", "assistant", "tool", "user"]
    assert sent["messages"][1]["tool_calls"][0]["function"] == {"name": "get_weather",
                                                                "arguments": '{"city":"Paris"}'}
    assert sent["messages"][2] == {"role": "tool", "tool_call_id": first.content[0].id, "content": "sunny"}
    rows = await consume_logs(gateway)
    assert len(rows) == 3 and rows[2].completion_tokens == second.usage.output_tokens


# ---- OpenAI client → Anthropic channel ------------------------------------------------------


async def test_openai_client_on_anthropic_channel(fake_anthropic, gateway, admin):
    await add_anthropic(admin, fake_anthropic)
    client = openai_client(gateway, await admin.add_token(remain_quota=50_000_000))
    fake_anthropic.cache_read_tokens = 64
    reply = await client.chat.completions.create(
        model=CLAUDE, user="alice", stop=["NEVER"], temperature=0.3,
        messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": "hello"}])
    assert reply.choices[0].message.content == REPLY_PREFIX + "hello"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage.prompt_tokens_details.cached_tokens == 64
    sent = fake_anthropic.requests[-1]["json"]
    # no max_tokens from the client: the model's output limit, reserved (ModelMaxOutputTokens)
    assert sent == {"model": CLAUDE, "max_tokens": 64_000, "system": "sys",
                    "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
                    "stop_sequences": ["NEVER"], "temperature": 0.3, "metadata": {"user_id": "alice"}}
    assert fake_anthropic.requests[-1]["headers"]["anthropic-version"] == "2023-06-01"

    # streaming with thinking and a tool call
    messages = [{"role": "user", "content": "call tool for Paris"}]
    stream = await client.chat.completions.create(model=CLAUDE, messages=messages, tools=[OPENAI_TOOL],
                                                  reasoning_effort="low", stream=True,
                                                  stream_options={"include_usage": True})
    reasoning, calls, finish, usage = "", {}, None, None
    async for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            reasoning += getattr(delta, "reasoning_content", None) or ""
            for call in delta.tool_calls or []:
                entry = calls.setdefault(call.index, {"id": None, "name": None, "arguments": ""})
                entry["id"] = entry["id"] or call.id
                entry["name"] = entry["name"] or call.function.name
                entry["arguments"] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    assert reasoning.startswith("Let me think about: call tool")
    assert finish == "tool_calls" and len(calls) == 1
    assert calls[0]["name"] == "get_weather" and json.loads(calls[0]["arguments"]) == TOOL_INPUT
    assert calls[0]["id"].startswith("toolu_")
    assert usage.completion_tokens > 0 and usage.prompt_tokens_details.cached_tokens == 64
    sent = fake_anthropic.requests[-1]["json"]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048} and sent["stream"] is True
    assert sent["tools"] == [WEATHER_TOOL]

    # the tool result turn: the OpenAI client cannot give the signature back, so thinking is
    # left off for this turn (Anthropic would reject it), and the call id still matches
    messages += [{"role": "assistant", "content": None, "reasoning_content": reasoning,
                  "tool_calls": [{"id": calls[0]["id"], "type": "function",
                                  "function": {"name": "get_weather", "arguments": calls[0]["arguments"]}}]},
                 {"role": "tool", "tool_call_id": calls[0]["id"], "content": "sunny"}]
    reply = await client.chat.completions.create(model=CLAUDE, messages=messages, tools=[OPENAI_TOOL],
                                                  reasoning_effort="low")
    assert reply.choices[0].message.content.endswith("call tool for Paris")
    sent = fake_anthropic.requests[-1]["json"]
    assert "thinking" not in sent
    assert sent["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": calls[0]["id"],
                                               "content": "sunny"}]


async def test_openai_client_sees_anthropic_errors_in_openai_shape(fake_anthropic, gateway, admin):
    await add_anthropic(admin, fake_anthropic)
    client = openai_client(gateway, await admin.add_token(remain_quota=50_000_000))
    fake_anthropic.push_fault(Fault("status", status=429, retry_after="3"))
    with pytest.raises(openai.RateLimitError) as info:
        await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "x"}])
    assert info.value.body["type"] == "rate_limit_exceeded"  # Anthropic's rate_limit_error in OpenAI's words
    # an error event before any content: nothing reached the client, so it is an HTTP error
    # (and with retries configured, another channel would be tried)
    fake_anthropic.push_fault(Fault("stream_error", after_events=4))
    with pytest.raises(openai.InternalServerError, match="Overloaded"):
        await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "x"}],
                                             stream=True)
    # after content has flowed, the error arrives in-band
    fake_anthropic.push_fault(Fault("stream_error", after_events=6, delay=0.2))
    stream = await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "x"}],
                                                  stream=True)
    with pytest.raises(openai.APIError, match="Overloaded"):
        async for _ in stream:
            pass


# ---- billing --------------------------------------------------------------------------------


async def test_cache_and_thinking_tokens_are_priced_as_configured(fake_anthropic, gateway, admin):
    await add_anthropic(admin, fake_anthropic)
    await admin.set_option("ModelRatio", {CLAUDE: 2.0})
    await admin.set_option("CompletionRatio", {CLAUDE: 5.0})
    await admin.set_option("CacheRatio", {CLAUDE: 0.1})
    await admin.set_option("CreateCacheRatio", {CLAUDE: 2.0})  # not the default 1.25: the option is read
    fake_anthropic.cache_read_tokens = 1000
    fake_anthropic.cache_write_tokens = 200
    fake_anthropic.cache_write_1h_tokens = 50  # of the 200: one-hour writes, at 1.6 × the 5-minute price
    key = await admin.add_token(remain_quota=50_000_000)
    client = claude_client(gateway, key)
    thinking = {"type": "enabled", "budget_tokens": 1024}
    msgs = [{"role": "user", "content": "price this please"}]

    regular = await client.messages.create(model=CLAUDE, max_tokens=2048, thinking=thinking, messages=msgs)
    async with client.messages.stream(model=CLAUDE, max_tokens=2048, thinking=thinking, messages=msgs) as s:
        streamed = await s.get_final_message()
    assert regular.usage.output_tokens_details.thinking_tokens > 0
    chat = await openai_client(gateway, key).chat.completions.create(
        model=CLAUDE, messages=[{"role": "user", "content": "price this please"}], reasoning_effort="low")

    def expected(base_input: int, output: int) -> int:
        return round((base_input + 1000 * 0.1 + 150 * 2.0 + 50 * 3.2 + output * 5.0) * 2.0)

    rows = await consume_logs(gateway)
    assert len(rows) == 3  # one row per request
    for row, usage in ((rows[0], regular.usage), (rows[1], streamed.usage)):
        assert usage.cache_read_input_tokens == 1000 and usage.cache_creation_input_tokens == 200
        assert usage.cache_creation.ephemeral_1h_input_tokens == 50
        assert usage.cache_creation.ephemeral_5m_input_tokens == 150
        assert row.prompt_tokens == usage.input_tokens + 1200
        assert row.completion_tokens == usage.output_tokens  # thinking included, at the output price
        assert row.quota == expected(usage.input_tokens, usage.output_tokens)
        other = json.loads(row.other)
        assert other["cache_tokens"] == 1000 and other["cache_write_tokens"] == 200
        assert other["cache_creation_tokens_1h"] == 50 and other["cache_creation_ratio_1h"] == pytest.approx(3.2)
        assert other["cache_ratio"] == 0.1 and other["reasoning_tokens"] == usage.output_tokens_details.thinking_tokens
    assert rows[2].prompt_tokens == chat.usage.prompt_tokens
    assert rows[2].quota == expected(chat.usage.prompt_tokens - 1200, chat.usage.completion_tokens)
    assert chat.usage.completion_tokens_details.reasoning_tokens > 0
    tokens = (await admin.ok("GET", "/api/token/"))["items"]
    assert tokens[0]["used_quota"] == sum(r.quota for r in rows)


# ---- models, count_tokens -------------------------------------------------------------------


async def test_model_list_and_count_tokens(fake_anthropic, gateway, admin):
    await add_anthropic(admin, fake_anthropic)
    key = await admin.add_token(remain_quota=50_000_000)
    client = claude_client(gateway, key)
    page = await client.models.list()
    assert [model.id async for model in page] == [CLAUDE]
    assert page.has_more is False and page.first_id == page.last_id == CLAUDE
    model = await client.models.retrieve(CLAUDE)
    assert model.type == "model" and model.display_name == CLAUDE and model.created_at.year >= 2024
    with pytest.raises(anthropic.NotFoundError):
        await client.models.retrieve("claude-nope")

    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        neutral = await http.get("/v1/models", headers={"vendor-version": "1", "Authorization": f"Bearer {key}"})
        plain = await http.get("/v1/models", headers={"Authorization": f"Bearer {key}"})
        bad = await http.post("/v1/messages/count_tokens", headers={"x-api-key": "sk-wrong"},
                              json={"model": CLAUDE, "messages": []})
    assert neutral.json()["data"][0]["type"] == "model"
    assert plain.json()["object"] == "list"  # no version header: OpenAI's list
    assert bad.status_code == 401 and bad.json()["error"]["type"] == "authentication_error"

    small = await client.messages.count_tokens(model=CLAUDE, messages=[{"role": "user", "content": "hi"}])
    big = await client.messages.count_tokens(
        model=CLAUDE, system="You are terse.", tools=[WEATHER_TOOL],
        messages=[{"role": "user", "content": "What is the weather like in Paris today? " * 10}])
    assert 0 < small.input_tokens < big.input_tokens
    assert await consume_logs(gateway) == []  # not billed


# ---- errors ---------------------------------------------------------------------------------


async def test_errors_in_anthropic_shape(fake_anthropic, gateway, admin):
    await add_anthropic(admin, fake_anthropic)
    key = await admin.add_token(remain_quota=50_000_000)
    with pytest.raises(anthropic.AuthenticationError) as info:
        await claude_client(gateway, "sk-wrong").messages.create(
            model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert info.value.body["type"] == "error" and info.value.body["error"]["type"] == "authentication_error"

    client = claude_client(gateway, key)
    with pytest.raises(anthropic.NotFoundError) as info:
        await client.messages.create(model="claude-unknown", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert info.value.body["error"]["type"] == "not_found_error"

    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        headers = {"Authorization": f"Bearer {key}", "anthropic-version": "2023-06-01"}
        malformed = await http.post("/v1/messages", headers=headers, content=b'{"model": ')
        no_max = await http.post("/v1/messages", headers=headers,
                                 json={"model": CLAUDE, "messages": [{"role": "user", "content": "x"}]})
        ok = await http.post("/v1/messages", headers=headers,  # Bearer works as well as x-api-key
                             json={"model": CLAUDE, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})
    assert malformed.status_code == 400
    assert malformed.json()["type"] == "error" and malformed.json()["error"]["type"] == "invalid_request_error"
    assert no_max.status_code == 400 and "max_tokens" in no_max.json()["error"]["message"]
    assert ok.status_code == 200 and ok.json()["type"] == "message"

    fake_anthropic.push_fault(Fault("overloaded"))
    with pytest.raises(anthropic.OverloadedError):
        await client.messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    fake_anthropic.push_fault(Fault("status", status=400, message="messages.0: bad thing"))
    with pytest.raises(anthropic.BadRequestError, match="bad thing"):
        await client.messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "x"}])

    # in-band errors after a 200: forwarded as Anthropic's `event: error`
    fake_anthropic.push_fault(Fault("stream_error", after_events=5))
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
        async with client.messages.stream(model=CLAUDE, max_tokens=100,
                                          messages=[{"role": "user", "content": "x"}]) as stream:
            async for _ in stream:
                pass
    fake_anthropic.push_fault(Fault("stream_cut", after_events=5))
    with pytest.raises(anthropic.APIStatusError, match="ended early|broke"):
        async with client.messages.stream(model=CLAUDE, max_tokens=100,
                                          messages=[{"role": "user", "content": "x"}]) as stream:
            async for _ in stream:
                pass
    errors = await error_logs(gateway)
    assert len(errors) >= 2


async def test_messages_client_sees_openai_upstream_errors_in_anthropic_shape(fake_openai, gateway, admin):
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT)
    client = claude_client(gateway, await admin.add_token(remain_quota=50_000_000))
    fake_openai.fail_next(429, "Rate limit reached for requests")
    with pytest.raises(anthropic.RateLimitError) as info:
        await client.messages.create(model=GPT, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert info.value.body["error"]["type"] == "rate_limit_error"
    fake_openai.push_fault(SharedFault("stream_cut", after_chunks=3))  # a kind every fake knows
    with pytest.raises(anthropic.APIStatusError, match="ended early|broke"):
        async with client.messages.stream(model=GPT, max_tokens=100,
                                          messages=[{"role": "user", "content": "x"}]) as stream:
            async for _ in stream:
                pass


async def test_openai_client_keeps_signed_thinking_across_tool_turns(fake_anthropic, gateway, admin):
    """An OpenAI client that sends the assistant message back as it came (with
    ``reasoning_details``) keeps thinking on for the tool-result turn on an Anthropic channel."""
    await add_anthropic(admin, fake_anthropic)
    client = openai_client(gateway, await admin.add_token(remain_quota=50_000_000))
    messages: list[dict] = [{"role": "user", "content": "call tool for Rome"}]
    first = await client.chat.completions.create(model=CLAUDE, messages=messages, tools=[OPENAI_TOOL],
                                                 reasoning_effort="low")
    assistant = first.choices[0].message.model_dump(exclude_none=True)
    details = assistant["reasoning_details"]
    assert details[0]["signature"] == signature_for(assistant["reasoning_content"])
    call = assistant["tool_calls"][0]
    messages += [assistant, {"role": "tool", "tool_call_id": call["id"], "content": "warm"}]
    second = await client.chat.completions.create(model=CLAUDE, messages=messages, tools=[OPENAI_TOOL],
                                                  reasoning_effort="low")
    assert second.choices[0].finish_reason == "stop"
    sent = fake_anthropic.requests[-1]["json"]
    assert sent["thinking"]["type"] == "enabled"  # the fake verified the signature and the block order
    assert sent["messages"][1]["content"][0] == {"type": "thinking", "thinking": assistant["reasoning_content"],
                                                 "signature": details[0]["signature"]}

    # streamed: the signature arrives in a reasoning_details delta after the reasoning text
    stream = await client.chat.completions.create(model=CLAUDE, messages=messages[:1], tools=[OPENAI_TOOL],
                                                  reasoning_effort="low", stream=True)
    reasoning, signatures, calls = "", [], {}
    async for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta.model_dump(exclude_none=True)
            reasoning += delta.get("reasoning_content", "")
            signatures += [d["signature"] for d in delta.get("reasoning_details", []) if d.get("signature")]
            for c in delta.get("tool_calls", []):
                entry = calls.setdefault(c["index"], {"id": c.get("id"), "arguments": ""})
                entry["arguments"] += c["function"].get("arguments", "")
    assert signatures == [signature_for(reasoning)]
    replay = messages[:1] + [
        {"role": "assistant", "content": None, "reasoning_content": reasoning,
         "reasoning_details": [{"type": "reasoning.text", "signature": signatures[0]}],
         "tool_calls": [{"id": calls[0]["id"], "type": "function",
                         "function": {"name": "get_weather", "arguments": calls[0]["arguments"]}}]},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "warm"}]
    await client.chat.completions.create(model=CLAUDE, messages=replay, tools=[OPENAI_TOOL], reasoning_effort="low")
    assert fake_anthropic.requests[-1]["json"]["thinking"]["type"] == "enabled"
