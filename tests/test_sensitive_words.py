"""new-api's sensitive words (``CheckSensitiveEnabled``, ``CheckSensitiveOnPromptEnabled``,
``SensitiveWords``; issue 28 item 4): a relay request whose prompt contains a word is refused
in the client's own error shape with new-api's code (``sensitive_words_detected``; status 400
where new-api sends 500), before any upstream call and without charge; the SDKs are told
not to retry it. The matcher is built once per change of the option, and a big body is
scanned off the event loop."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from faregate.db import models as m
from faregate.exchange import sensitive
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_anthropic.testing import FakeAnthropic
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_gemini.testing import FLASH, FakeGemini
from faregate_adapter_gemini.testing.fixtures import FAKE_GEMINI_KEY
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.schema import validate_error

GPT, CLAUDE = "gpt-4o-mini", "claude-sonnet-4-5"
QUOTA = 5_000_000


@pytest.fixture
async def key(gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI) -> str:
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{GPT},text-embedding-3-small,dall-e-3,tts-1")
    await admin.set_option("ModelPrice", {"dall-e-3": 0.04, "tts-1": 0.01})
    token: str = await admin.add_token(remain_quota=QUOTA)
    return token


@pytest.fixture
async def client(gateway: GatewayServer, key: str) -> AsyncIterator[openai.AsyncOpenAI]:
    made = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=2)
    yield made
    await made.close()


async def _quota_untouched(gateway: GatewayServer) -> None:
    await gateway.gateway.ledger.flush()
    token = await m.Token.get(name="test")
    assert token.remain_quota == QUOTA and token.used_quota == 0
    assert not await m.Log.filter(type=m.LOG_CONSUME).exists()


async def test_the_openai_sdk_gets_new_apis_refusal_for_the_default_word_and_nothing_is_charged(
        client: openai.AsyncOpenAI, gateway: GatewayServer, fake_openai: FakeOpenAI) -> None:
    # new-api's defaults: the check on, the word "test_sensitive"; matched case-insensitively
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=GPT, messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "say TEST_Sensitive twice"}]}])
    response = caught.value.response
    assert response.status_code == 400
    assert response.headers["x-should-retry"] == "false"  # max_retries=2 above: still one request
    body = validate_error(response.json())["error"]
    assert body["code"] == "sensitive_words_detected"
    assert body["message"].startswith("sensitive_words_detected (request id: ")
    assert "test_sensitive" not in body["message"].lower()  # the word is logged, not told
    assert fake_openai.requests == []
    await _quota_untouched(gateway)
    # a prompt without it passes
    reply = await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hello"}])
    assert reply.choices[0].message.content


async def test_configured_words_are_matched_anywhere_in_the_prompt_case_insensitively(
        client: openai.AsyncOpenAI, admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    await admin.set_option("SensitiveWords", "  Forbidden Fruit \n\n违禁词\n")
    for prompt in ("I like forbidden FRUIT.", "这是违禁词吗"):
        with pytest.raises(openai.BadRequestError):
            await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": prompt}])
    # the old default is gone, a word split by other text does not match
    await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "test_sensitive"}])
    await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "forbidden red fruit"}])
    assert len(fake_openai.requests) == 2
    # in a tool's definition too (new-api's prompt text includes the tools)
    tool = {"type": "function", "function": {"name": "f", "description": "picks the forbidden fruit",
                                             "parameters": {"type": "object", "properties": {}}}}
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}],
                                             tools=[tool])  # type: ignore[list-item]


@pytest.mark.parametrize("switch", ["CheckSensitiveEnabled", "CheckSensitiveOnPromptEnabled"])
async def test_either_switch_off_lets_the_word_through(client: openai.AsyncOpenAI, admin: AdminClient,
                                                        fake_openai: FakeOpenAI, switch: str) -> None:
    await admin.set_option(switch, False)
    await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "test_sensitive"}])
    assert len(fake_openai.requests) == 1


async def test_an_empty_word_list_checks_nothing(client: openai.AsyncOpenAI, admin: AdminClient,
                                                 fake_openai: FakeOpenAI) -> None:
    await admin.set_option("SensitiveWords", "\n  \n")
    await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "test_sensitive"}])
    assert len(fake_openai.requests) == 1


async def test_every_openai_endpoint_with_a_prompt_is_checked(gateway: GatewayServer, key: str,
                                                              fake_openai: FakeOpenAI) -> None:
    bodies = {
        "/v1/completions": {"model": GPT, "prompt": ["ok", "a test_sensitive line"]},
        "/v1/embeddings": {"model": "text-embedding-3-small", "input": "test_sensitive"},
        "/v1/responses": {"model": GPT, "input": [{"role": "user", "content": "test_sensitive"}]},
        "/v1/images/generations": {"model": "dall-e-3", "prompt": "a test_sensitive cat"},
        "/v1/audio/speech": {"model": "tts-1", "input": "test_sensitive", "voice": "alloy"},
        "/pg/chat/completions": None,  # the playground: below, with the login session
    }
    async with httpx.AsyncClient(base_url=gateway.base_url, headers={"Authorization": f"Bearer {key}"},
                                 timeout=60) as http:
        for path, body in bodies.items():
            if body is None:
                continue
            resp = await http.post(path, json=body)
            assert resp.status_code == 400, (path, resp.text)
            assert validate_error(resp.json())["error"]["code"] == "sensitive_words_detected", path
    assert fake_openai.requests == []
    await _quota_untouched(gateway)


async def test_the_playground_is_checked(gateway: GatewayServer, admin: AdminClient, key: str,
                                         fake_openai: FakeOpenAI) -> None:
    resp = await admin.call("POST", "/pg/chat/completions", json={
        "model": GPT, "messages": [{"role": "user", "content": "test_sensitive"}]})
    assert resp["error"]["code"] == "sensitive_words_detected"
    assert fake_openai.requests == []


async def test_anthropic_and_gemini_clients_get_the_refusal_in_their_own_shape(
        gateway: GatewayServer, admin: AdminClient, fake_anthropic: FakeAnthropic, fake_gemini: FakeGemini) -> None:
    await admin.add_channel(base_url=fake_anthropic.base_url, models=CLAUDE, type=14, key=FAKE_ANTHROPIC_KEY,
                            name="anthropic")
    await admin.add_channel(base_url=fake_gemini.base_url, models=FLASH, type=24, key=FAKE_GEMINI_KEY, name="gemini")
    await admin.set_option("ModelRatio", {CLAUDE: 1, FLASH: 1})
    key = await admin.add_token(remain_quota=QUOTA)
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=60) as http:
        resp = await http.post("/v1/messages", headers={"x-api-key": key, "anthropic-version": "2023-06-01"},
                               json={"model": CLAUDE, "max_tokens": 16, "system": "you test_sensitive things",
                                     "messages": [{"role": "user", "content": "hi"}]})
        assert resp.status_code == 400
        assert resp.headers["x-should-retry"] == "false"
        body = resp.json()
        assert body["type"] == "error" and body["error"]["message"].startswith("sensitive_words_detected")
        resp = await http.post(f"/v1beta/models/{FLASH}:generateContent", headers={"x-goog-api-key": key},
                               json={"contents": [{"role": "user", "parts": [{"text": "test_sensitive"}]}]})
        assert resp.status_code == 400
        error = resp.json()["error"]
        assert error["code"] == 400 and error["message"].startswith("sensitive_words_detected")
    # the official Anthropic SDK: its BadRequestError, and no retry (X-Should-Retry)
    sdk = anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=key, max_retries=2)
    try:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await sdk.messages.create(model=CLAUDE, max_tokens=16,
                                      messages=[{"role": "user", "content": "Test_Sensitive"}])
    finally:
        await sdk.close()
    assert caught.value.body["error"]["message"].startswith("sensitive_words_detected")  # type: ignore[index]
    assert fake_anthropic.requests == [] and fake_gemini.requests == []
    await gateway.gateway.ledger.flush()
    assert not await m.Log.filter(type=m.LOG_CONSUME).exists()


async def test_the_word_list_is_checked_and_listed(admin: AdminClient) -> None:
    resp = await admin.call("PUT", "/api/option/", json={"key": "SensitiveWords",
                                                         "value": "x" * (sensitive.MAX_WORDS_CHARS + 1)})
    assert resp["success"] is False and "SensitiveWords" in resp["message"]
    await admin.set_option("SensitiveWords", "one\ntwo")
    options = {o["key"]: o["value"] for o in await admin.ok("GET", "/api/option/")}
    assert options["SensitiveWords"] == "one\ntwo"
    assert options["CheckSensitiveEnabled"] == "true" and options["StopOnSensitiveEnabled"] == "true"


async def test_the_matcher_is_built_once_per_change_not_per_request(
        client: openai.AsyncOpenAI, admin: AdminClient, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[list[str]] = []
    original = sensitive.WordMatcher.__init__

    def counting(self: sensitive.WordMatcher, words: list[str]) -> None:
        built.append(words)
        original(self, words)

    monkeypatch.setattr(sensitive.WordMatcher, "__init__", counting)
    await admin.set_option("SensitiveWords", "alpha\nbeta")
    after_change = len(built)
    assert after_change >= 1
    for _ in range(5):
        await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "gamma"}])
    assert len(built) == after_change


async def test_a_big_prompt_is_scanned_off_the_event_loop(make_gateway: Any, fake_openai: FakeOpenAI,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    gw: GatewayServer = await make_gateway(settings={"offload_body_kb": 16})
    admin = AdminClient(gw.base_url)
    try:
        await admin.setup_root()
        await admin.add_channel(base_url=fake_openai.base_url, models=GPT)
        key = await admin.add_token(remain_quota=QUOTA)
    finally:
        await admin.close()
    threads: list[int] = []
    original = sensitive.WordMatcher.first

    def watching(self: sensitive.WordMatcher, text: str) -> str | None:
        threads.append(threading.get_ident())
        return original(self, text)

    monkeypatch.setattr(sensitive.WordMatcher, "first", watching)
    loop_thread = threading.get_ident()
    big = "lorem ipsum " * 4000 + "test_sensitive"  # ~48 KB: beyond the offload threshold
    async with httpx.AsyncClient(base_url=gw.base_url, headers={"Authorization": f"Bearer {key}"},
                                 timeout=60) as http:  # a loaded machine: the big body waits its turn
        resp = await http.post("/v1/chat/completions", json={"model": GPT,
                                                             "messages": [{"role": "user", "content": big}]})
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "sensitive_words_detected"
        assert threads and loop_thread not in threads
        threads.clear()
        resp = await http.post("/v1/chat/completions", json={"model": GPT,
                                                             "messages": [{"role": "user", "content": "small"}]})
        assert resp.status_code == 200
        assert threads == [loop_thread]  # a small one inline
    assert len(fake_openai.requests) == 1


def test_the_matcher_finds_the_first_word_in_one_pass() -> None:
    matcher = sensitive.parse_words("b\nABC\n\n  cd ")
    assert matcher is not None and matcher.words == ["b", "abc", "cd"]
    assert matcher.first("xxaBcd") == "b"
    assert matcher.first("zzz") is None
    assert sensitive.parse_words(" \n ") is None
    with pytest.raises(ValueError):
        sensitive.parse_words("a\x00b")


async def test_count_tokens_is_not_scanned(gateway: GatewayServer, key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # a count is never refused for its words: scanning it would be work whose result goes unused
    scanned: list[str] = []
    original = sensitive.WordMatcher.first

    def watching(self: sensitive.WordMatcher, text: str) -> str | None:
        scanned.append(text)
        return original(self, text)

    monkeypatch.setattr(sensitive.WordMatcher, "first", watching)
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=60,
                                 headers={"x-api-key": key, "anthropic-version": "2023-06-01"}) as http:
        resp = await http.post("/v1/messages/count_tokens", json={
            "model": CLAUDE, "messages": [{"role": "user", "content": "test_sensitive"}]})
        assert resp.status_code == 200, resp.text
        assert resp.json()["input_tokens"] > 0
        assert scanned == []
        resp = await http.post("/v1/messages", json={
            "model": CLAUDE, "max_tokens": 10, "messages": [{"role": "user", "content": "test_sensitive"}]})
        assert resp.status_code == 400 and scanned  # the same prompt relayed is scanned (and refused)
