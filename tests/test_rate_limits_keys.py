"""Per-key rate limits (issue 29, item 2; LiteLLM's names): ``rpm_limit``, ``tpm_limit`` and
``max_parallel_requests`` set through the key API, group defaults (``KeyRateLimitGroup``), and
a 429 the official SDKs read as a rate limit, with their vendor's headers."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx
import openai
import pytest

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

MODEL = "gpt-4o-mini"


async def _setup(server: GatewayServer, upstream: FakeOpenAI, **fields: Any) -> tuple[AdminClient, str]:
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.add_channel(base_url=upstream.base_url, models=MODEL)
    return admin, await admin.add_token(unlimited=True, **fields)


async def _ask(server: GatewayServer, key: str, **body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        return await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                               json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], **body})


def _seconds(duration: str) -> int:
    """OpenAI's reset duration (``"1m0s"``, ``"57s"``) in seconds."""
    minutes, _, rest = duration.rpartition("m")
    return int(minutes or 0) * 60 + int(rest.removesuffix("s"))


async def test_key_api_sets_and_shows_the_limits(admin: AdminClient) -> None:
    created = await admin.ok("POST", "/api/token/", json={"name": "k", "unlimited_quota": True, "expired_time": -1,
                                                          "rpm_limit": 60, "tpm_limit": 90_000,
                                                          "max_parallel_requests": 4})
    shown = await admin.ok("GET", f"/api/token/{created['id']}")
    assert (shown["rpm_limit"], shown["tpm_limit"], shown["max_parallel_requests"]) == (60, 90_000, 4)
    await admin.ok("PUT", "/api/token/", json={"id": created["id"], "rpm_limit": 0, "tpm_limit": 5})
    listed = (await admin.ok("GET", "/api/token/"))["items"][0]
    assert (listed["rpm_limit"], listed["tpm_limit"], listed["max_parallel_requests"]) == (0, 5, 4)
    for field, value in (("rpm_limit", -1), ("tpm_limit", "many"), ("max_parallel_requests", 2**31)):
        body = await admin.call("PUT", "/api/token/", json={"id": created["id"], field: value})
        assert body["success"] is False and field in body["message"]


async def test_rpm_refusal_is_the_openai_sdks_rate_limit_error(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    _, key = await _setup(server, fake_openai, rpm_limit=2)
    client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key=key, max_retries=0)
    for _ in range(2):
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    headers = caught.value.response.headers
    assert headers["x-ratelimit-limit-requests"] == "2"
    assert headers["x-ratelimit-remaining-requests"] == "0"
    # one request back every 30 s, all of them a minute after the burst
    assert 1 <= int(headers["retry-after"]) <= 30
    assert _seconds(headers["x-ratelimit-reset-requests"]) > int(headers["retry-after"])
    await client.close()


async def test_anthropic_sdk_sees_its_headers(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    _, key = await _setup(server, fake_openai, rpm_limit=1)
    client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key=key, max_retries=0)
    await client.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(anthropic.RateLimitError) as caught:
        await client.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    headers = caught.value.response.headers
    assert headers["anthropic-ratelimit-requests-limit"] == "1"
    assert headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert headers["anthropic-ratelimit-requests-reset"].endswith("Z")
    assert "x-ratelimit-limit-requests" not in headers
    assert caught.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    await client.close()


async def test_gemini_clients_get_resource_exhausted(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    _, key = await _setup(server, fake_openai, rpm_limit=1)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        path = f"/v1beta/models/{MODEL}:generateContent"
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        assert (await http.post(path, params={"key": key}, json=body)).status_code == 200
        refused = await http.post(path, params={"key": key}, json=body)
    assert refused.status_code == 429
    assert refused.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert int(refused.headers["retry-after"]) >= 1


async def test_tokens_are_counted_when_the_answer_settles(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    _, key = await _setup(server, fake_openai, tpm_limit=1000)
    fake_openai.answer_tokens = 1500  # far more than the prompt estimated at admission
    assert (await _ask(server, key)).status_code == 200
    refused = await _ask(server, key)
    assert refused.status_code == 429
    assert refused.headers["x-ratelimit-limit-tokens"] == "1000"
    assert refused.headers["x-ratelimit-remaining-tokens"] == "0"
    assert "tokens per minute" in refused.json()["error"]["message"]


async def test_a_failed_request_gives_its_tokens_back(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    _, key = await _setup(server, fake_openai, tpm_limit=1000)
    for _ in range(3):  # each estimated at 600 tokens: two would not fit in a minute unless given back
        fake_openai.fail_next(400, "bad input")
        assert (await _ask(server, key, max_tokens=590)).status_code == 400
    assert (await _ask(server, key, max_tokens=590)).status_code == 200


async def test_parallel_requests_hold_a_slot_until_they_end(make_gateway: Any) -> None:
    async with FakeOpenAI(latency=1.0) as slow:
        server = await make_gateway()
        _, key = await _setup(server, slow, max_parallel_requests=1)
        first = asyncio.create_task(_ask(server, key))
        limiter = server.gateway.limiter
        while not any(limiter.store._leases.values()):  # type: ignore[attr-defined]
            await asyncio.sleep(0.01)
        assert (await _ask(server, key)).status_code == 429
        assert (await first).status_code == 200
        assert (await _ask(server, key)).status_code == 200


async def test_group_defaults_apply_and_a_key_only_tightens_them(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    admin, loose = await _setup(server, fake_openai, rpm_limit=100)
    tight = await admin.add_token(unlimited=True, name="tight", rpm_limit=1)
    await admin.set_option("KeyRateLimitGroup", {"default": {"rpm_limit": 2}})
    assert [(await _ask(server, loose)).status_code for _ in range(3)] == [200, 200, 429]
    assert [(await _ask(server, tight)).status_code for _ in range(2)] == [200, 429]


@pytest.mark.parametrize("value", ['{"default": {"rpm": 1}}', '{"default": {"rpm_limit": -1}}',
                                   '{"default": 5}', "[1]"])
async def test_bad_group_defaults_are_400(admin: AdminClient, value: str) -> None:
    body = await admin.call("PUT", "/api/option/", json={"key": "KeyRateLimitGroup", "value": value})
    assert body["success"] is False and "KeyRateLimitGroup" in body["message"]
