"""A request that sets no output bound goes upstream with the one the gateway reserved (the
model's output limit, ``ModelMaxOutputTokens``), in the upstream's own spelling, on every path:
passed through (OpenAI's ``max_completion_tokens``, renamed ``max_tokens`` for a vendor that knows
only that; Gemini's ``generationConfig.maxOutputTokens``; Responses' ``max_output_tokens``;
legacy completions' ``max_tokens``, 16 as OpenAI's default) and converted (the canonical bound,
which every provider renders). A request with its own bound, or whose price does not depend on
its output, goes as it came."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_anthropic.testing import FakeAnthropic
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_gemini.testing import FLASH, FakeGemini
from faregate_adapter_gemini.testing.fixtures import FAKE_GEMINI_KEY
from faregate_adapter_openai.testing import FakeOpenAI

GPT = "gpt-4o"  # 16,384 output tokens
VENDOR_MODEL = "llama-local"  # on an Ollama channel, named by no table: 4,096
CLAUDE = "claude-sonnet-4-5"  # 64,000
FREE = "free-model"
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
async def client(gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic,
                 fake_gemini: FakeGemini) -> AsyncIterator[httpx.AsyncClient]:
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{GPT},{FREE}", name="openai")
    await admin.add_channel(base_url=fake_openai.base_url, models=VENDOR_MODEL, type=4, name="ollama")
    await admin.add_channel(base_url=fake_anthropic.base_url, models=CLAUDE, type=14, key=FAKE_ANTHROPIC_KEY,
                            name="anthropic")
    await admin.add_channel(base_url=fake_gemini.base_url, models=FLASH, type=24, key=FAKE_GEMINI_KEY, name="gemini")
    await admin.set_option("ModelRatio", {GPT: 1.25, VENDOR_MODEL: 0.1, CLAUDE: 1.5, FLASH: 0.15, FREE: 0})
    key = await admin.add_token(remain_quota=10**9)
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=60, headers={
            "Authorization": f"Bearer {key}", "x-api-key": key, "x-goog-api-key": key}) as http:
        yield http


def sent(fake: Any) -> dict[str, Any]:
    body: dict[str, Any] = fake.requests[-1]["json"]
    return body


async def post(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = await http.post(path, json=body)
    assert resp.status_code == 200, resp.text
    answer: dict[str, Any] = resp.json()
    return answer


# ---- passed through ---------------------------------------------------------------------------
async def test_openai_chat_to_openai_gets_max_completion_tokens(client: httpx.AsyncClient,
                                                                fake_openai: FakeOpenAI) -> None:
    body = {"model": GPT, "messages": HELLO, "temperature": 0.5}
    await post(client, "/v1/chat/completions", body)
    assert sent(fake_openai) == {**body, "max_completion_tokens": 16_384}


async def test_a_null_bound_is_replaced_and_a_vendor_that_knows_only_max_tokens_gets_that(
        client: httpx.AsyncClient, fake_openai: FakeOpenAI) -> None:
    await post(client, "/v1/chat/completions", {"model": VENDOR_MODEL, "messages": HELLO, "max_tokens": None})
    assert sent(fake_openai) == {"model": VENDOR_MODEL, "messages": HELLO, "max_tokens": 4096}


async def test_a_streamed_chat_gets_the_bound_too(client: httpx.AsyncClient, fake_openai: FakeOpenAI) -> None:
    resp = await client.post("/v1/chat/completions", json={"model": GPT, "messages": HELLO, "stream": True, "n": 2})
    assert resp.status_code == 200 and resp.text.rstrip().endswith("data: [DONE]")
    assert sent(fake_openai)["max_completion_tokens"] == 16_384  # each of the two choices: both reserved


async def test_a_clients_own_bound_goes_as_the_exact_bytes(client: httpx.AsyncClient, fake_openai: FakeOpenAI) -> None:
    raw = json.dumps({"model": GPT, "messages": HELLO, "max_tokens": 77}, indent=2).encode()
    resp = await client.post("/v1/chat/completions", content=raw, headers={"Content-Type": "application/json"})
    assert resp.status_code == 200
    assert fake_openai.requests[-1]["body"] == raw


async def test_the_bound_is_spliced_into_the_clients_bytes(client: httpx.AsyncClient,
                                                         fake_openai: FakeOpenAI) -> None:
    # the rest of the body goes as the client wrote it: no re-encoding per request (or attempt)
    raw = json.dumps({"model": GPT, "messages": HELLO, "temperature": 0.5}, indent=2).encode()
    resp = await client.post("/v1/chat/completions", content=raw, headers={"Content-Type": "application/json"})
    assert resp.status_code == 200
    assert fake_openai.requests[-1]["body"] == b'{"max_completion_tokens":16384,' + raw[1:]


async def test_a_price_that_does_not_depend_on_output_adds_no_bound(client: httpx.AsyncClient,
                                                                    fake_openai: FakeOpenAI) -> None:
    raw = json.dumps({"model": FREE, "messages": HELLO}, indent=2).encode()
    resp = await client.post("/v1/chat/completions", content=raw, headers={"Content-Type": "application/json"})
    assert resp.status_code == 200
    assert fake_openai.requests[-1]["body"] == raw


async def test_gemini_to_gemini_gets_max_output_tokens_in_its_own_spelling(client: httpx.AsyncClient,
                                                                            fake_gemini: FakeGemini) -> None:
    contents = [{"role": "user", "parts": [{"text": "hello"}]}]
    await post(client, f"/v1beta/models/{FLASH}:generateContent", {"contents": contents})
    assert sent(fake_gemini) == {"contents": contents, "generationConfig": {"maxOutputTokens": 65_536}}
    body = {"contents": contents, "generation_config": {"temperature": 0.2, "candidate_count": 1}}
    await post(client, f"/v1beta/models/{FLASH}:generateContent", body)
    assert sent(fake_gemini) == {"contents": contents, "generation_config": {
        "temperature": 0.2, "candidate_count": 1, "maxOutputTokens": 65_536}}


async def test_responses_to_openai_gets_max_output_tokens(client: httpx.AsyncClient, fake_openai: FakeOpenAI) -> None:
    answer = await post(client, "/v1/responses", {"model": GPT, "input": "hello"})
    assert sent(fake_openai) == {"model": GPT, "input": "hello", "max_output_tokens": 16_384}
    assert answer["max_output_tokens"] == 16_384  # the Response says the bound it ran under


async def test_legacy_completions_get_openais_default_for_every_choice(client: httpx.AsyncClient,
                                                                        fake_openai: FakeOpenAI) -> None:
    await post(client, "/v1/completions", {"model": GPT, "prompt": ["one", "two"], "n": 2})
    assert sent(fake_openai) == {"model": GPT, "prompt": ["one", "two"], "n": 2, "max_tokens": 16}


# ---- converted --------------------------------------------------------------------------------
async def test_openai_chat_to_anthropic_gets_the_models_limit_not_4096(client: httpx.AsyncClient,
                                                                      fake_anthropic: FakeAnthropic) -> None:
    await post(client, "/v1/chat/completions", {"model": CLAUDE, "messages": HELLO})
    assert sent(fake_anthropic)["max_tokens"] == 64_000


async def test_openai_chat_to_gemini_gets_max_output_tokens(client: httpx.AsyncClient, fake_gemini: FakeGemini) -> None:
    await post(client, "/v1/chat/completions", {"model": FLASH, "messages": HELLO})
    assert sent(fake_gemini)["generationConfig"]["maxOutputTokens"] == 65_536


async def test_gemini_to_openai_and_responses_to_anthropic(client: httpx.AsyncClient, fake_openai: FakeOpenAI,
                                                           fake_anthropic: FakeAnthropic) -> None:
    await post(client, f"/v1beta/models/{GPT}:generateContent", {"contents": [{"parts": [{"text": "hello"}]}]})
    assert sent(fake_openai)["max_completion_tokens"] == 16_384
    await post(client, "/v1/responses", {"model": CLAUDE, "input": "hello"})
    assert sent(fake_anthropic)["max_tokens"] == 64_000


async def test_anthropic_messages_always_carry_the_clients_bound(client: httpx.AsyncClient,
                                                                 fake_openai: FakeOpenAI) -> None:
    await post(client, "/v1/messages", {"model": GPT, "max_tokens": 300, "messages": HELLO})
    assert sent(fake_openai)["max_completion_tokens"] == 300
