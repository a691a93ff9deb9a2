"""Per-channel changes to the upstream request (issue 15): new-api's parameter override
(the legacy merge and the operations, on passed-through and converted requests alike), the
header override's placeholders, the channel system prompt (per format, logged when it
overwrote the caller's), and the per-channel proxy (http with credentials, socks5)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
import pytest_asyncio

from faregate import jsonutil
from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs
from faregate.testing.proxies import HttpProxy, Socks5Proxy
from faregate_adapter_openai.testing import FakeOpenAI

MODEL = "gpt-4o-mini"
MSGS = [{"role": "user", "content": "hello there"}]


def ops(*operations: dict[str, Any]) -> str:
    return jsonutil.dumps_str({"operations": list(operations)})


@pytest_asyncio.fixture
async def caller(gateway: GatewayServer, admin: AdminClient) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0)
    yield client
    await client.close()


async def test_legacy_override_merges_into_a_passed_through_body(fake_openai: FakeOpenAI, admin: AdminClient,
                                                                 caller: openai.AsyncOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL,
                            param_override='{"temperature": 0.25, "seed": 7}')
    await caller.chat.completions.create(model=MODEL, messages=MSGS, temperature=1.5)
    sent = fake_openai.requests[-1]["json"]
    assert (sent["temperature"], sent["seed"], sent["messages"]) == (0.25, 7, MSGS)


async def test_operations_with_conditions(fake_openai: FakeOpenAI, admin: AdminClient,
                                          caller: openai.AsyncOpenAI, gateway: GatewayServer) -> None:
    override = ops(
        {"mode": "set", "path": "max_completion_tokens", "value": 64,
         "conditions": [{"path": "model", "mode": "prefix", "value": "gpt-4o"}]},
        {"mode": "set", "path": "seed", "value": 1, "conditions": [{"path": "model", "mode": "full", "value": "o3"}]},
        {"mode": "delete", "path": "user"},
        {"mode": "regex_replace", "path": "messages.-1.content", "from": "hello (\\w+)", "to": "hi $1!"},
        {"mode": "append", "path": "stop", "value": ["END"]},
        {"mode": "copy", "from": "messages.0.role", "to": "metadata.first_role"},
        {"mode": "set_header", "path": "X-Route", "value": "blue"},
        {"mode": "set", "path": "temperature", "value": 0.1, "logic": "AND",
         "conditions": [{"path": "request_headers.x-tier", "mode": "full", "value": "gold"},
                        {"path": "temperature", "mode": "gte", "value": 1}]},
    )
    cid = await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, param_override=override)
    await caller.chat.completions.create(model=MODEL, messages=MSGS, user="u-1", stop=["STOP"], temperature=1.2,
                                         extra_headers={"X-Tier": "gold"})
    sent = fake_openai.requests[-1]["json"]
    assert sent["max_completion_tokens"] == 64 and "seed" not in sent and "user" not in sent
    assert sent["messages"][-1]["content"] == "hi there!"
    assert sent["stop"] == ["STOP", "END"] and sent["metadata"] == {"first_role": "user"}
    assert sent["temperature"] == 0.1
    assert fake_openai.requests[-1]["headers"]["x-route"] == "blue"
    (row,) = await consume_logs(gateway)
    assert row.channel_id == cid and jsonutil.loads(row.other)["param_override"] is True


async def test_return_error_refuses_the_request(fake_openai: FakeOpenAI, admin: AdminClient,
                                                caller: openai.AsyncOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, param_override=ops(
        {"mode": "return_error", "value": {"message": "streaming is off here", "status_code": 422,
                                           "code": "no_stream"},
         "conditions": {"stream": True}}))
    with pytest.raises(openai.UnprocessableEntityError) as info:
        await caller.chat.completions.create(model=MODEL, messages=MSGS, stream=True)
    assert "streaming is off here" in str(info.value) and fake_openai.requests == []
    assert (await caller.chat.completions.create(model=MODEL, messages=MSGS)).choices


async def test_the_override_applies_to_a_converted_request_too(fake_openai: FakeOpenAI, admin: AdminClient,
                                                               gateway: GatewayServer) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, param_override=ops(
        {"mode": "set", "path": "service_tier", "value": "flex"}, {"mode": "to_upper", "path": "messages.0.content"}))
    key = await admin.add_token()
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:  # Anthropic's format in, OpenAI's out
        resp = await http.post("/v1/messages", headers={"x-api-key": key}, json={
            "model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "quiet please"}]})
    assert resp.status_code == 200, resp.text
    sent = fake_openai.requests[-1]["json"]
    assert sent["service_tier"] == "flex" and sent["messages"][0]["content"] == "QUIET PLEASE"


async def test_a_stored_override_the_checks_refuse_fails_over(
        fake_openai: FakeOpenAI, admin: AdminClient, caller: openai.AsyncOpenAI, gateway: GatewayServer) -> None:
    async with FakeOpenAI() as other:
        bad = await admin.add_channel(base_url=other.base_url, models=MODEL, priority=10)
        good = await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
        await admin.set_option("RetryTimes", "1")
        # written by hand (or before the checks existed): never reaches an upstream
        await m.Channel.filter(id=bad).update(param_override='{"operations": [{"mode": "explode"}]}')
        await gateway.gateway.snapshot.load_channel(bad)
        await caller.chat.completions.create(model=MODEL, messages=MSGS)
        assert other.requests == [] and len(fake_openai.requests) == 1
        (row,) = await consume_logs(gateway)
        assert row.channel_id == good


async def test_header_override_placeholders(fake_openai: FakeOpenAI, admin: AdminClient,
                                            caller: openai.AsyncOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, key="sk-chan-123", header_override=
                            jsonutil.dumps_str({"X-Key": "k={api_key}", "X-Team": "{client_header:X-Team}",
                                                "X-Gone": "{client_header:X-Absent}"}))
    await caller.chat.completions.create(model=MODEL, messages=MSGS, extra_headers={"X-Team": "red"})
    seen = fake_openai.requests[-1]["headers"]
    assert seen["x-key"] == "k=sk-chan-123" and seen["x-team"] == "red" and "x-gone" not in seen


async def test_sync_fields_and_header_values_in_the_relay(fake_openai: FakeOpenAI, admin: AdminClient,
                                                          caller: openai.AsyncOpenAI) -> None:
    """new-api's sync_fields (the caller's header into the body, the body into a header) and a
    set_header value with the attempt's key and the caller's header in it, on the wire."""
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, key="sk-chan-456", param_override=ops(
        {"mode": "sync_fields", "from": "header:session_id", "to": "json:prompt_cache_key"},
        {"mode": "sync_fields", "from": "json:user", "to": "header:x-end-user"},
        {"mode": "set_header", "path": "X-Upstream-Key", "value": "Bearer {api_key}"},
        {"mode": "set_header", "path": "X-Trace", "value": "{client_header:X-Request-Tag}"}))
    await caller.chat.completions.create(model=MODEL, messages=MSGS, user="u-7",
                                         extra_headers={"session_id": "sess-42", "X-Request-Tag": "t-1"})
    sent = fake_openai.requests[-1]
    assert sent["json"]["prompt_cache_key"] == "sess-42"
    assert sent["headers"]["x-end-user"] == "u-7" and sent["headers"]["x-upstream-key"] == "Bearer sk-chan-456"
    assert sent["headers"]["x-trace"] == "t-1"


# -- system prompt -------------------------------------------------------------------------------
PROMPT = "You answer in French."


async def test_system_prompt_is_added_or_put_first(fake_openai: FakeOpenAI, admin: AdminClient,
                                                   caller: openai.AsyncOpenAI, gateway: GatewayServer) -> None:
    cid = await admin.add_channel(base_url=fake_openai.base_url, models=MODEL,
                                  setting=jsonutil.dumps_str({"system_prompt": PROMPT}))
    await caller.chat.completions.create(model=MODEL, messages=MSGS)
    assert fake_openai.requests[-1]["json"]["messages"] == [{"role": "system", "content": PROMPT}, *MSGS]
    own = [{"role": "system", "content": "Be brief."}, *MSGS]
    await caller.chat.completions.create(model=MODEL, messages=own)  # not to override: the caller's stays
    assert fake_openai.requests[-1]["json"]["messages"] == own
    await admin.ok("PUT", "/api/channel/", json={"id": cid, "setting": jsonutil.dumps_str(
        {"system_prompt": PROMPT, "system_prompt_override": True})})
    await caller.chat.completions.create(model=MODEL, messages=own)
    assert fake_openai.requests[-1]["json"]["messages"][0] == {"role": "system", "content": f"{PROMPT}\nBe brief."}
    rows = await consume_logs(gateway)
    flags = [jsonutil.loads(r.other).get("is_system_prompt_overwritten") for r in rows]
    assert flags == [None, None, True]


async def test_system_prompt_of_a_converted_request(fake_openai: FakeOpenAI, admin: AdminClient,
                                                    gateway: GatewayServer) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, setting=jsonutil.dumps_str(
        {"system_prompt": PROMPT, "system_prompt_override": True}))
    key = await admin.add_token()
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post("/v1/messages", headers={"x-api-key": key}, json={
            "model": MODEL, "max_tokens": 50, "system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]})
    assert resp.status_code == 200, resp.text
    first = fake_openai.requests[-1]["json"]["messages"][0]
    assert first["role"] == "system" and jsonutil.dumps_str(first["content"]).index("French") < \
        jsonutil.dumps_str(first["content"]).index("brief")


# -- proxies -------------------------------------------------------------------------------------
async def test_requests_go_through_the_channels_http_proxy(fake_openai: FakeOpenAI, admin: AdminClient,
                                                           caller: openai.AsyncOpenAI) -> None:
    async with HttpProxy() as proxy:
        await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, setting=jsonutil.dumps_str(
            {"proxy": f"http://alice:pw@127.0.0.1:{proxy.port}"}))
        reply = await caller.chat.completions.create(model=MODEL, messages=MSGS)
        assert reply.choices[0].message.content
        ((line, auth),) = proxy.seen
        assert line.startswith(f"POST {fake_openai.base_url}/v1/chat/completions")
        assert auth == "Basic YWxpY2U6cHc="  # alice:pw


async def test_requests_go_through_the_channels_socks5_proxy(fake_openai: FakeOpenAI, admin: AdminClient,
                                                             caller: openai.AsyncOpenAI) -> None:
    async with Socks5Proxy() as proxy:
        await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, setting=jsonutil.dumps_str(
            {"proxy": f"socks5://127.0.0.1:{proxy.port}"}))
        reply = await caller.chat.completions.create(model=MODEL, messages=MSGS)
        assert reply.choices[0].message.content
        port = fake_openai.base_url.rsplit(":", 1)[1]
        assert proxy.seen == [(f"CONNECT 127.0.0.1:{port}", "")] and len(fake_openai.requests) == 1
