"""The Responses API end to end, with the official ``openai`` SDK (strict response
validation) as client, on every kind of channel: an OpenAI channel (type 1, native: the
client's body passed through), an Anthropic channel (type 14, converted to Messages) and a
chat-only OpenAI-compatible one (DeepSeek, type 43, converted to Chat Completions). Every
answer and stream event is checked against OpenAI's published schema, every upstream
request against the vendor's (the fakes), every bill against the consume log."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel

from faregate import jsonutil
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs
from faregate_adapter_anthropic.testing import REPLY_PREFIX as ANTHROPIC_REPLY
from faregate_adapter_anthropic.testing import THINKING_PREFIX, FakeAnthropic, signature_for
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_openai.testing import REPLY_PREFIX as OPENAI_REPLY
from faregate_adapter_openai.testing import TOOL_ARGUMENTS, FakeOpenAI, Fault
from faregate_adapter_openai.testing.answers import answer_of, check_answer
from faregate_adapter_openai.testing.responses import CACHED_TOKENS, REASONING_TOKENS
from faregate_adapter_openai.testing.schema import validate, validate_error

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the SDK warns about model names

GPT, CLAUDE, DEEPSEEK = "gpt-4o-mini", "claude-sonnet-4-5", "deepseek-chat"
RATIOS = {GPT: 1.0, CLAUDE: 1.0, DEEPSEEK: 1.0}
COMPLETION, CACHE = 2.0, 0.5
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather for a city", "strict": False,
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def expected_quota(usage: Any) -> int:
    cached = usage.input_tokens_details.cached_tokens
    return max(1, round(usage.input_tokens - cached + cached * CACHE + usage.output_tokens * COMPLETION))


@dataclass
class Via:
    """One kind of channel under test: its model, fake upstream, reply prefix, and the
    upstream path a request of the client's lands on."""

    kind: str
    model: str
    fake: Any
    reply: str
    path: str
    client: openai.AsyncOpenAI
    key: str
    sent: list[httpx.Request]

    @property
    def upstream(self) -> dict[str, Any]:
        return self.fake.requests[-1]  # type: ignore[no-any-return]


_OPEN: list[openai.AsyncOpenAI] = []


@pytest.fixture(autouse=True)
async def _close_clients():
    yield
    while _OPEN:
        await _OPEN.pop().close()


def sent_hook(sent: list[httpx.Request] | None) -> Any:
    async def keep(request: httpx.Request) -> None:
        if sent is not None:
            sent.append(request)

    return keep


def client_for(gateway: GatewayServer, key: str, sent: list[httpx.Request] | None = None) -> openai.AsyncOpenAI:
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                                _strict_response_validation=True,
                                http_client=httpx.AsyncClient(event_hooks={"request": [sent_hook(sent)]}))
    _OPEN.append(client)
    return client


async def priced(admin: AdminClient, **extra: Any) -> None:
    await admin.set_option("ModelRatio", {**RATIOS, **extra})
    await admin.set_option("CompletionRatio", {m: COMPLETION for m in RATIOS})
    await admin.set_option("CacheRatio", {m: CACHE for m in RATIOS})


async def add_claude(admin: AdminClient, fake: FakeAnthropic, models: str = CLAUDE, **fields: Any) -> int:
    return await admin.add_channel(base_url=fake.base_url, models=models, type=14, key=FAKE_ANTHROPIC_KEY,
                                   name="anthropic", **fields)


@pytest.fixture(params=["native", "anthropic", "chat_only"])
async def via(request: pytest.FixtureRequest, gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI,
              fake_anthropic: FakeAnthropic) -> Via:
    await priced(admin)
    kind = request.param
    if kind == "native":
        await admin.add_channel(base_url=fake_openai.base_url, models=GPT)
        model, fake, reply, path = GPT, fake_openai, OPENAI_REPLY, "/v1/responses"
    elif kind == "anthropic":
        await add_claude(admin, fake_anthropic)
        model, fake, reply, path = CLAUDE, fake_anthropic, ANTHROPIC_REPLY, "/v1/messages"
    else:
        await admin.add_channel(base_url=fake_openai.base_url, models=DEEPSEEK, type=43, name="deepseek")
        model, fake, reply, path = DEEPSEEK, fake_openai, OPENAI_REPLY, "/v1/chat/completions"
    key = await admin.add_token(remain_quota=50_000_000)
    sent: list[httpx.Request] = []
    return Via(kind, model, fake, reply, path, client_for(gateway, key, sent), key, sent)


def check_events(events: list[Any]) -> None:
    """Each event valid against the spec, sequence numbers 0, 1, 2 …"""
    for n, event in enumerate(events):
        data = event.to_dict() if hasattr(event, "to_dict") else event
        validate("ResponseStreamEvent", data)
        assert data["sequence_number"] == n, (n, data)


async def bill_of(gateway: GatewayServer) -> Any:
    (row,) = await consume_logs(gateway)
    return row


# ---- regular answers on every channel kind ---------------------------------------------------


async def test_text_with_instructions(via: Via, gateway: GatewayServer) -> None:
    raw = await via.client.responses.with_raw_response.create(model=via.model, input="hello there",
                                                             instructions="Answer briefly.", max_output_tokens=200)
    resp = raw.parse()  # the SDK's strict validation
    validate("Response", raw.http_response.json())
    assert raw.request_id and raw.request_id == raw.http_response.headers["x-oneapi-request-id"]
    assert resp.output_text == via.reply + "hello there"
    assert resp.status == "completed" and resp.model == via.model and resp.instructions == "Answer briefly."
    upstream = via.upstream
    assert upstream["path"] == via.path
    if via.kind == "native":  # the client's bytes, untouched
        assert upstream["body"] == via.sent[-1].content
    elif via.kind == "anthropic":
        assert upstream["json"]["system"] == "Answer briefly." and upstream["json"]["max_tokens"] == 200
        assert upstream["json"]["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello there"}]}]
    else:
        assert upstream["json"]["messages"] == [{"role": "system", "content": "Answer briefly."},
                                                {"role": "user", "content": "hello there"}]
        assert upstream["json"]["max_tokens"] == 200  # DeepSeek's name for the bound (its preset)
    row = await bill_of(gateway)
    assert resp.usage is not None
    assert (row.model_name, row.is_stream) == (via.model, False)
    assert (row.prompt_tokens, row.completion_tokens) == (resp.usage.input_tokens, resp.usage.output_tokens)
    assert row.quota == expected_quota(resp.usage)
    assert jsonutil.loads(row.other)["usage_source"] == "upstream"


async def test_function_tool_round_trip(via: Via, gateway: GatewayServer) -> None:
    first = await via.client.responses.create(model=via.model, input="please call tool get_weather",
                                              tools=[WEATHER])  # type: ignore[list-item]
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather" and json.loads(call.arguments) == json.loads(TOOL_ARGUMENTS)
    history: list[Any] = [{"role": "user", "content": "please call tool get_weather"},
                          *(item.to_dict() for item in first.output),
                          {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21°C"}]
    second = await via.client.responses.create(model=via.model, input=history, tools=[WEATHER])  # type: ignore[list-item]
    assert second.output_text == via.reply + "please call tool get_weather"
    upstream = via.upstream["json"]
    if via.kind == "anthropic":  # the fake checks tool_result ids answer the turn's tool_use ids
        result = upstream["messages"][-1]["content"][-1]
        assert result["type"] == "tool_result" and result["content"] == "sunny, 21°C"
    elif via.kind == "chat_only":
        assistant, tool = upstream["messages"][-2:]
        assert assistant["tool_calls"][0]["id"] == call.call_id
        assert tool == {"role": "tool", "tool_call_id": call.call_id, "content": "sunny, 21°C"}
    else:
        assert upstream["input"] == json.loads(via.sent[-1].content)["input"]
    rows = await consume_logs(gateway)
    assert len(rows) == 2 and all(r.quota > 0 for r in rows)


async def test_stream_events_and_bill(via: Via, gateway: GatewayServer) -> None:
    stream = await via.client.responses.create(model=via.model, input="stream it back", stream=True)
    events = [event async for event in stream]
    check_events(events)
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    for name in ("response.output_item.added", "response.content_part.added", "response.output_text.done",
                 "response.content_part.done", "response.output_item.done"):
        assert name in kinds, name
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == via.reply + "stream it back"
    final = events[-1].response
    assert final.output_text == text and final.usage is not None
    assert len({e.response.id for e in events if hasattr(e, "response")}) == 1
    row = await bill_of(gateway)
    assert row.is_stream and (row.prompt_tokens, row.completion_tokens) == (final.usage.input_tokens,
                                                                            final.usage.output_tokens)
    assert row.quota == expected_quota(final.usage)


async def test_stream_helper_accumulates_the_final_response(via: Via, gateway: GatewayServer) -> None:
    async with via.client.responses.stream(model=via.model, input="please call tool now",
                                           tools=[WEATHER]) as stream:  # type: ignore[list-item]
        arguments = "".join([e.delta async for e in stream if e.type == "response.function_call_arguments.delta"])
        final = await stream.get_final_response()
    (call,) = [item for item in final.output if item.type == "function_call"]
    assert call.name == "get_weather" and json.loads(call.arguments) == json.loads(TOOL_ARGUMENTS)
    assert json.loads(arguments) == json.loads(TOOL_ARGUMENTS)
    row = await bill_of(gateway)
    assert final.usage is not None and row.completion_tokens == final.usage.output_tokens


async def test_json_schema_output(via: Via) -> None:
    class Reply(BaseModel):
        reply: str

    schema = {"type": "object", "properties": {"reply": {"type": "string"}}, "required": ["reply"],
              "additionalProperties": False}
    text = {"format": {"type": "json_schema", "name": "Reply", "schema": schema, "strict": True}}
    if via.kind == "native":
        parsed = await via.client.responses.parse(model=via.model, input="json please", text_format=Reply)
        assert parsed.output_parsed is not None and parsed.output_parsed.reply == via.reply + "json please"
        return
    await via.client.responses.create(model=via.model, input="json please", text=text)  # type: ignore[arg-type]
    upstream = via.upstream["json"]
    if via.kind == "anthropic":
        assert upstream["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    else:
        assert upstream["response_format"] == {"type": "json_schema",
                                               "json_schema": {"name": "Reply", "schema": schema, "strict": True}}


async def test_reasoning(via: Via, gateway: GatewayServer) -> None:
    resp = await via.client.responses.create(model=via.model, input="think first", max_output_tokens=4096,
                                             reasoning={"effort": "low", "summary": "auto"},
                                             include=["reasoning.encrypted_content"])
    assert resp.output_text.endswith("think first")
    upstream = via.upstream["json"]
    if via.kind == "chat_only":  # DeepSeek has no summaries to give: the effort goes up
        assert upstream["reasoning_effort"] == "low"
        return
    (item,) = [i for i in resp.output if i.type == "reasoning"]
    assert resp.output.index(item) == 0 and item.summary
    if via.kind == "anthropic":
        thought = THINKING_PREFIX + "think first"
        assert upstream["thinking"] == {"type": "enabled", "budget_tokens": 2048}
        assert item.summary[0].text == thought and item.encrypted_content == signature_for(thought)
    else:
        assert item.encrypted_content and resp.usage is not None
        assert resp.usage.output_tokens_details.reasoning_tokens == REASONING_TOKENS
        other = jsonutil.loads((await bill_of(gateway)).other)
        assert other["reasoning_tokens"] == REASONING_TOKENS


async def test_sync_client_in_a_thread(via: Via) -> None:
    def call() -> str:
        with openai.OpenAI(base_url=via.client.base_url, api_key=via.key, max_retries=0,
                           _strict_response_validation=True) as client:
            return client.responses.create(model=via.model, input="from a thread").output_text

    assert await asyncio.to_thread(call) == via.reply + "from a thread"


# ---- native: what only OpenAI's channel does ----------------------------------------------


@pytest.fixture
async def native(gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI) -> Via:
    await priced(admin)
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT)
    key = await admin.add_token(remain_quota=50_000_000)
    sent: list[httpx.Request] = []
    return Via("native", GPT, fake_openai, OPENAI_REPLY, "/v1/responses", client_for(gateway, key, sent), key, sent)


async def test_native_state_and_cache_pass_through_and_bill(native: Via, gateway: GatewayServer) -> None:
    resp = await native.client.responses.create(model=GPT, previous_response_id="resp_earlier", store=True,
                                                input="and then, after all that was said before?",
                                                prompt_cache_key="conv-1", max_output_tokens=500,
                                                metadata={"ticket": "42"})
    assert native.upstream["body"] == native.sent[-1].content  # its own bound: the bytes as they came
    assert native.upstream["json"]["previous_response_id"] == "resp_earlier"
    assert resp.usage is not None and resp.usage.input_tokens_details.cached_tokens == CACHED_TOKENS
    row = await bill_of(gateway)
    assert jsonutil.loads(row.other)["cache_tokens"] == CACHED_TOKENS
    assert row.quota == expected_quota(resp.usage)


async def test_native_model_mapping_changes_only_the_model(gateway: GatewayServer, admin: AdminClient,
                                                          fake_openai: FakeOpenAI) -> None:
    await priced(admin)
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT, model_mapping=json.dumps({GPT: "gpt-4o"}))
    sent: list[httpx.Request] = []
    client = client_for(gateway, await admin.add_token(remain_quota=50_000_000), sent)
    await client.responses.create(model=GPT, input=[{"role": "user", "content": "mapped"}], temperature=0.5)
    # and no max_output_tokens from the client: the bound the gateway reserved (gpt-4o's limit)
    assert fake_openai.requests[-1]["json"] == {**json.loads(sent[-1].content), "model": "gpt-4o",
                                                "max_output_tokens": 16_384}
    row = await bill_of(gateway)
    assert row.model_name == GPT and jsonutil.loads(row.other)["upstream_model_name"] == "gpt-4o"


async def test_force_convert_sends_an_openai_channel_chat_completions(gateway: GatewayServer, admin: AdminClient,
                                                                       fake_openai: FakeOpenAI) -> None:
    """For a reseller whose /v1/responses is missing or broken: the channel setting converts."""
    await priced(admin)
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT, setting=json.dumps({"force_convert": True}))
    client = client_for(gateway, await admin.add_token(remain_quota=50_000_000))
    resp = await client.responses.create(model=GPT, input="convert me")
    assert resp.output_text == OPENAI_REPLY + "convert me"
    assert fake_openai.requests[-1]["path"] == "/v1/chat/completions"


async def test_native_stream_events_pass_through_unchanged(native: Via, gateway: GatewayServer) -> None:
    async with httpx.AsyncClient() as http, http.stream(
            "POST", gateway.base_url + "/v1/responses", headers={"Authorization": f"Bearer {native.key}"},
            json={"model": GPT, "input": "raw", "stream": True, "reasoning": {"effort": "high", "summary": "auto"}},
    ) as resp:
        body = await resp.aread()
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
    check_events(events)
    assert "response.reasoning_summary_text.delta" in [e["type"] for e in events]
    final = events[-1]["response"]["usage"]
    row = await bill_of(gateway)
    assert (row.prompt_tokens, row.completion_tokens) == (final["input_tokens"], final["output_tokens"])
    assert jsonutil.loads(row.other)["reasoning_tokens"] == REASONING_TOKENS


async def test_a_native_stream_ending_without_its_final_event_bills_the_output_seen(native: Via,
                                                                                     gateway: GatewayServer) -> None:
    """new-api #5235: such a stream refunded everything (free output)."""
    native.fake.push_fault(Fault("stream_cut", after_chunks=8))
    stream = await native.client.responses.create(model=GPT, input="a longer message to cut off", stream=True)
    events = [event async for event in stream]
    assert events[-1].type == "error" and "response.completed" not in [e.type for e in events]
    check_events(events[:-1])
    validate("ResponseErrorEvent", events[-1].to_dict())
    row = await bill_of(gateway)
    other = jsonutil.loads(row.other)
    assert (other["end_reason"], other["usage_source"]) == ("eof", "estimated")
    assert row.completion_tokens > 0 and row.quota > 0


async def test_client_leaving_mid_stream_is_billed_on_the_upstream_usage(native: Via,
                                                                         gateway: GatewayServer) -> None:
    native.fake.push_fault(Fault("stall", after_chunks=3, delay=0.3))
    async with httpx.AsyncClient() as http, http.stream(
            "POST", gateway.base_url + "/v1/responses", headers={"Authorization": f"Bearer {native.key}"},
            json={"model": GPT, "input": "bye", "stream": True}) as resp:
        async for _ in resp.aiter_bytes():
            break  # the client goes away after the first bytes
    rows: list[Any] = []
    for _ in range(200):
        rows = await consume_logs(gateway)
        if rows:
            break
        await asyncio.sleep(0.05)
    (row,) = rows
    other = jsonutil.loads(row.other)
    # the rest of the upstream stream was read on the side: billed on its final usage
    assert (other["end_reason"], other["usage_source"]) == ("client_gone", "upstream")
    assert row.completion_tokens == len(OPENAI_REPLY + "bye") // 4
    assert all(lease.reserved == 0 for lease in gateway.gateway.ledger.leases.values())


# ---- Anthropic: reasoning and tools in one converted conversation ----------------------------


async def test_anthropic_thinking_and_tools_round_trip_streamed(gateway: GatewayServer, admin: AdminClient,
                                                               fake_anthropic: FakeAnthropic) -> None:
    await priced(admin)
    await add_claude(admin, fake_anthropic)
    client = client_for(gateway, await admin.add_token(remain_quota=50_000_000))
    ask = "please call tool get_weather"
    stream = await client.responses.create(model=CLAUDE, input=ask, tools=[WEATHER], stream=True,  # type: ignore[list-item]
                                           reasoning={"effort": "medium"}, max_output_tokens=16000)
    events = [e async for e in stream]
    check_events(events)
    kinds = [e.type for e in events]
    for name in ("response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
                 "response.reasoning_summary_text.done", "response.function_call_arguments.delta",
                 "response.function_call_arguments.done"):
        assert name in kinds, name
    final = events[-1].response
    reasoning, call = final.output
    assert reasoning.type == "reasoning" and call.type == "function_call"
    assert reasoning.encrypted_content == signature_for(reasoning.summary[0].text)
    # the thinking block must go back signed, first in the assistant turn: the fake checks both
    history = [{"role": "user", "content": ask}, *(i.to_dict() for i in final.output),
               {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
    again = await client.responses.create(model=CLAUDE, input=history, tools=[WEATHER],  # type: ignore[list-item]
                                          reasoning={"effort": "medium"}, max_output_tokens=16000)
    assert again.output_text == ANTHROPIC_REPLY + ask
    turn = fake_anthropic.requests[-1]["json"]["messages"][1]["content"]
    assert [b["type"] for b in turn] == ["thinking", "tool_use"]


# ---- what cannot be converted ---------------------------------------------------------------


NEEDS_OPENAI = [
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"conversation": "conv_1"}, "conversation"),
    ({"tools": [{"type": "web_search"}]}, "tools"),
    ({"tool_choice": {"type": "web_search_preview"}}, "tool_choice"),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input"),
    ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "file_1"}]}]}, "input"),
    ({"background": True, "stream": True}, "background"),
]


async def test_what_needs_openai_is_a_400_on_converted_channels(gateway: GatewayServer, admin: AdminClient,
                                                                fake_anthropic: FakeAnthropic) -> None:
    await priced(admin)
    await add_claude(admin, fake_anthropic)
    key = await admin.add_token()
    async with httpx.AsyncClient() as http:
        for extra, param in NEEDS_OPENAI:
            resp = await http.post(gateway.base_url + "/v1/responses", headers={"Authorization": f"Bearer {key}"},
                                   json={"model": CLAUDE, "input": "hi", **extra})
            assert resp.status_code == 400, (extra, resp.text)
            validate_error(resp.json())
            assert resp.json()["error"]["param"] == param, (extra, resp.json())
    assert fake_anthropic.requests == []


async def test_what_needs_openai_goes_only_to_native_channels(gateway: GatewayServer, admin: AdminClient,
                                                              fake_openai: FakeOpenAI,
                                                              fake_anthropic: FakeAnthropic) -> None:
    await priced(admin)
    # the Anthropic channel is preferred (higher priority) for everything it can serve
    await add_claude(admin, fake_anthropic, models=GPT, model_mapping=json.dumps({GPT: CLAUDE}), priority=10)
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT, priority=0)
    client = client_for(gateway, await admin.add_token(remain_quota=50_000_000))
    plain = await client.responses.create(model=GPT, input="hi")
    assert plain.output_text == ANTHROPIC_REPLY + "hi"
    for _ in range(3):
        stateful = await client.responses.create(model=GPT, input="and?", previous_response_id="resp_1")
        assert stateful.output_text == OPENAI_REPLY + "and?"
    assert len(fake_openai.requests) == 3 and len(fake_anthropic.requests) == 1


# ---- bad input -----------------------------------------------------------------------------


BAD = [
    ({"input": "x"}, "model"),
    ({"model": GPT}, "input"),
    ({"model": GPT, "input": []}, "input"),
    ({"model": GPT, "input": 42}, "input"),
    ({"model": GPT, "input": ["not an item"]}, "input[0]"),
    ({"model": GPT, "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
    ({"model": GPT, "input": [{"role": "user", "content": 7}]}, "input[0].content"),
    ({"model": GPT, "input": [{"type": "function_call", "call_id": "c", "name": "f"}]}, "input[0].arguments"),
    ({"model": GPT, "input": "x", "max_output_tokens": 5}, "max_output_tokens"),
    ({"model": GPT, "input": "x", "temperature": 3}, "temperature"),
    ({"model": GPT, "input": "x", "stream": "yes"}, "stream"),
    ({"model": GPT, "input": "x", "instructions": ["x"]}, "instructions"),
    ({"model": GPT, "input": "x", "tools": {"type": "function"}}, "tools"),
    ({"model": GPT, "input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
    ({"model": GPT, "input": "x", "tool_choice": "sometimes"}, "tool_choice"),
    ({"model": GPT, "input": "x", "reasoning": {"effort": "extreme"}}, "reasoning.effort"),
    ({"model": GPT, "input": "x", "text": {"format": {"type": "json_schema"}}}, "text.format"),
    ({"model": GPT, "input": "x", "metadata": {"k": 1}}, "metadata"),
    ({"model": GPT, "input": "x", "truncation": "sometimes"}, "truncation"),
    ({"model": GPT, "input": "x", "background": True}, "background"),
]


async def test_bad_input_is_a_400_naming_the_field_and_nothing_goes_up(native: Via, gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        for body, param in BAD:
            resp = await http.post("/v1/responses", json=body, headers={"Authorization": f"Bearer {native.key}"})
            assert resp.status_code == 400, (body, resp.text)
            validate_error(resp.json())
            assert resp.json()["error"]["param"] == param, (body, resp.json())
    assert native.fake.requests == []
    with pytest.raises(openai.BadRequestError) as info:  # and the SDK reads it as OpenAI's
        await native.client.responses.create(model=GPT, input="x", max_output_tokens=1)
    assert info.value.body["param"] == "max_output_tokens"  # type: ignore[index]


# ---- failover ------------------------------------------------------------------------------


@pytest.fixture
async def two_kinds(gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI,
                    fake_anthropic: FakeAnthropic) -> openai.AsyncOpenAI:
    """An OpenAI channel first, an Anthropic one to fall back on, for the same model."""
    await priced(admin)
    await admin.set_option("RetryTimes", "1")
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT, priority=10)
    await add_claude(admin, fake_anthropic, models=GPT, model_mapping=json.dumps({GPT: CLAUDE}), priority=0)
    return client_for(gateway, await admin.add_token(remain_quota=50_000_000))


async def test_failover_from_a_failing_native_channel_to_a_converted_one(two_kinds: openai.AsyncOpenAI,
                                                                        gateway: GatewayServer,
                                                                        fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(500, "the server fell over")
    resp = await two_kinds.responses.create(model=GPT, input="anyone there?")
    assert resp.output_text == ANTHROPIC_REPLY + "anyone there?"
    row = await bill_of(gateway)
    assert len(jsonutil.loads(row.other)["admin_info"]["use_channel"]) == 2


async def test_an_error_event_before_the_first_byte_fails_over(two_kinds: openai.AsyncOpenAI,
                                                               gateway: GatewayServer,
                                                               fake_openai: FakeOpenAI) -> None:
    error = {"type": "error", "code": "server_error", "message": "overloaded", "param": None, "sequence_number": 0}
    fake_openai.push_fault(Fault("malformed_chunk", after_chunks=0, body=json.dumps(error).encode()))
    stream = await two_kinds.responses.create(model=GPT, input="stream anyway", stream=True)
    events = [e async for e in stream]
    check_events(events)
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == ANTHROPIC_REPLY + "stream anyway"
    assert len(jsonutil.loads((await bill_of(gateway)).other)["admin_info"]["use_channel"]) == 2


# ---- compaction ----------------------------------------------------------------------------


async def test_compaction_is_native_and_priced_as_new_api(gateway: GatewayServer, admin: AdminClient,
                                                          fake_openai: FakeOpenAI) -> None:
    compact_model = GPT + "-openai-compact"
    await admin.set_option("ModelRatio", {"*-openai-compact": 0.5})
    await admin.add_channel(base_url=fake_openai.base_url, models=compact_model)
    sent: list[httpx.Request] = []
    key = await admin.add_token(remain_quota=50_000_000)
    # not strictly validated: the SDK's CompactedResponse types its output as output items,
    # refusing the user messages that OpenAI's spec (checked below) says a compaction keeps
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                                http_client=httpx.AsyncClient(event_hooks={"request": [sent_hook(sent)]}))
    _OPEN.append(client)
    history: Any = [{"role": "user", "content": "plan the launch"},
                    {"role": "assistant", "content": "step one, step two"}]
    raw = await client.responses.with_raw_response.compact(model=GPT, input=history)
    compacted = raw.parse()
    validate("CompactResource", raw.http_response.json())
    assert compacted.output[-1].type == "compaction"
    upstream = fake_openai.requests[-1]
    assert upstream["path"] == "/v1/responses/compact"
    assert upstream["json"] == json.loads(sent[-1].content)  # the base model upstream, as the client sent it
    row = await bill_of(gateway)
    usage = compacted.usage
    assert row.model_name == compact_model
    assert (row.prompt_tokens, row.completion_tokens) == (usage.input_tokens, usage.output_tokens)
    assert row.quota == round((usage.input_tokens + usage.output_tokens) * 0.5)
    await admin.set_option("ModelPrice", {"*-openai-compact": 0.01})  # a price per call wins
    await client.responses.compact(model=GPT, input="again")
    assert (await consume_logs(gateway))[-1].quota == 5000


async def test_compaction_with_the_sync_sdk(gateway: GatewayServer, admin: AdminClient,
                                           fake_openai: FakeOpenAI) -> None:
    await admin.set_option("ModelRatio", {"*-openai-compact": 0.5})
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT + "-openai-compact")
    key = await admin.add_token(remain_quota=50_000_000)

    def compact() -> Any:
        # not strictly validated, as above (the SDK's type refuses the kept user message): the raw
        # answer is checked against OpenAI's CompactResource instead
        with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0) as sync:
            return sync.responses.with_raw_response.compact(model=GPT, input="plan the launch")

    raw = await asyncio.to_thread(compact)
    check_answer(answer_of(raw.http_response))
    assert raw.parse().output[-1].type == "compaction"
    row = await bill_of(gateway)
    assert row.model_name == GPT + "-openai-compact" and row.quota > 0


async def test_compaction_needs_a_native_channel(gateway: GatewayServer, admin: AdminClient,
                                                 fake_anthropic: FakeAnthropic) -> None:
    await priced(admin, **{CLAUDE + "-openai-compact": 1.0})
    await add_claude(admin, fake_anthropic, models=CLAUDE + "-openai-compact")
    client = client_for(gateway, await admin.add_token())
    with pytest.raises(openai.BadRequestError) as info:
        await client.responses.compact(model=CLAUDE, input="x")
    assert info.value.body["code"] == "endpoint_not_supported"  # type: ignore[index]
    with pytest.raises(openai.NotFoundError) as missing:  # a model no channel lists for compaction
        await client.responses.compact(model=GPT, input="x")
    assert f"`{GPT}-openai-compact`" in missing.value.message
    assert fake_anthropic.requests == []
