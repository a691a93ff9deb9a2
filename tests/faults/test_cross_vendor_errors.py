"""An upstream's error answered in another vendor's format is named in that format's words
(issue 28, item 10): Anthropic's ``rate_limit_error`` and Google's ``RESOURCE_EXHAUSTED``
reach an OpenAI client as ``rate_limit_exceeded``, and so on each way; the official SDK of
each client raises the exception class that status means (its ``RateLimitError``, Google's
``ClientError`` with code 429). The meaning travels as the core's neutral ``ErrorKind``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_anthropic.testing import FakeAnthropic, Fault
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_gemini.testing import FLASH, FakeGemini
from faregate_adapter_gemini.testing.fixtures import FAKE_GEMINI_KEY
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.schema import validate_error

CLAUDE, GPT = "claude-sonnet-4-5", "gpt-4o-mini"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def key(gateway: GatewayServer, admin: AdminClient, fake_anthropic: FakeAnthropic, fake_gemini: FakeGemini,
              fake_openai: FakeOpenAI) -> str:
    await admin.add_channel(base_url=fake_anthropic.base_url, models=CLAUDE, type=14, key=FAKE_ANTHROPIC_KEY,
                            name="anthropic")
    await admin.add_channel(base_url=fake_gemini.base_url, models=FLASH, type=24, key=FAKE_GEMINI_KEY, name="gemini")
    await admin.add_channel(base_url=fake_openai.base_url, models=GPT, name="openai")
    await admin.set_option("ModelRatio", {CLAUDE: 1, FLASH: 1, GPT: 1})
    token: str = await admin.add_token(remain_quota=50_000_000)
    return token


@pytest.fixture
async def clients(gateway: GatewayServer, key: str) -> AsyncIterator[dict[str, Any]]:
    made = {"openai": openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0),
            "anthropic": anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=key, max_retries=0),
            "genai": genai.Client(api_key=key, http_options=types.HttpOptions(base_url=gateway.base_url,
                                                                                  api_version="v1beta"))}
    yield made
    await made["openai"].close()
    await made["anthropic"].close()
    await made["genai"].aio.aclose()
    made["genai"].close()


@pytest.mark.parametrize("upstream", ["anthropic", "gemini"])
async def test_an_openai_client_reads_another_vendors_rate_limit_in_openais_words(
        clients: dict[str, Any], fake_anthropic: FakeAnthropic, fake_gemini: FakeGemini, upstream: str) -> None:
    fake = fake_anthropic if upstream == "anthropic" else fake_gemini
    fake.fail_next(429, "slow down")
    with pytest.raises(openai.RateLimitError) as caught:
        await clients["openai"].chat.completions.create(model=CLAUDE if upstream == "anthropic" else FLASH,
                                                        messages=HI)
    body = validate_error(caught.value.response.json())["error"]
    assert (body["type"], body["code"]) == ("rate_limit_exceeded", "rate_limit_exceeded")
    assert "slow down" in body["message"]


async def test_an_openai_client_reads_anthropics_overload_as_a_server_error(
        clients: dict[str, Any], fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.fail_next(529, "Overloaded")
    with pytest.raises(openai.InternalServerError) as caught:
        await clients["openai"].chat.completions.create(model=CLAUDE, messages=HI)
    body = caught.value.response.json()["error"]
    assert (body["type"], body["code"]) == ("server_error", "overloaded")


async def test_an_anthropic_client_reads_googles_rate_limit_as_its_own(clients: dict[str, Any],
                                                                        fake_gemini: FakeGemini) -> None:
    fake_gemini.fail_next(429, "slow down")
    with pytest.raises(anthropic.RateLimitError) as caught:
        await clients["anthropic"].messages.create(model=FLASH, max_tokens=16, messages=HI)
    assert caught.value.response.json()["error"]["type"] == "rate_limit_error"


async def test_an_anthropic_client_reads_googles_unavailable_as_overloaded(clients: dict[str, Any],
                                                                           fake_gemini: FakeGemini) -> None:
    fake_gemini.fail_next(503, "try later")
    with pytest.raises(anthropic.APIStatusError) as caught:
        await clients["anthropic"].messages.create(model=FLASH, max_tokens=16, messages=HI)
    assert caught.value.status_code == 529
    assert caught.value.response.json()["error"]["type"] == "overloaded_error"


@pytest.mark.parametrize("upstream", ["anthropic", "openai"])
async def test_a_google_client_reads_another_vendors_rate_limit_as_resource_exhausted(
        clients: dict[str, Any], fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, upstream: str) -> None:
    (fake_anthropic if upstream == "anthropic" else fake_openai).fail_next(429, "slow down")
    with pytest.raises(genai_errors.ClientError) as caught:
        await clients["genai"].aio.models.generate_content(model=CLAUDE if upstream == "anthropic" else GPT,
                                                           contents="hi")
    assert (caught.value.code, caught.value.status) == (429, "RESOURCE_EXHAUSTED")


async def test_a_vendors_own_error_reaches_its_own_client_unchanged(clients: dict[str, Any],
                                                                     fake_anthropic: FakeAnthropic,
                                                                     fake_gemini: FakeGemini) -> None:
    fake_anthropic.fail_next(429, "slow down")
    with pytest.raises(anthropic.RateLimitError) as caught:
        await clients["anthropic"].messages.create(model=CLAUDE, max_tokens=16, messages=HI)
    assert caught.value.response.json()["error"]["type"] == "rate_limit_error"
    fake_gemini.fail_next(429, "slow down")
    with pytest.raises(genai_errors.ClientError) as google:
        await clients["genai"].aio.models.generate_content(model=FLASH, contents="hi")
    assert google.value.status == "RESOURCE_EXHAUSTED"


async def test_a_stream_error_event_is_named_in_openais_words_too(clients: dict[str, Any],
                                                                  fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.push_fault(Fault("stream_error", after_events=4))  # Anthropic's overloaded_error event
    with pytest.raises(openai.InternalServerError) as caught:
        await clients["openai"].chat.completions.create(model=CLAUDE, messages=HI, stream=True)
    body = caught.value.response.json()["error"]
    assert (body["type"], body["code"]) == ("server_error", "overloaded")


async def test_a_channels_status_mapping_decides_what_the_error_is(gateway: GatewayServer, admin: AdminClient,
                                                                    fake_anthropic: FakeAnthropic) -> None:
    """The operator maps the channel's 429 to a 500: the OpenAI client reads a server error
    in OpenAI's words, not a rate limit with a 500 status."""
    await admin.add_channel(base_url=fake_anthropic.base_url, models=CLAUDE, type=14, key=FAKE_ANTHROPIC_KEY,
                            name="anthropic", status_code_mapping='{"429": "500"}')
    await admin.set_option("ModelRatio", {CLAUDE: 1})
    key = await admin.add_token(remain_quota=50_000_000)
    fake_anthropic.fail_next(429, "slow down")
    async with openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0) as client:
        with pytest.raises(openai.InternalServerError) as caught:
            await client.chat.completions.create(model=CLAUDE, messages=HI)
    assert caught.value.status_code == 500
    assert caught.value.response.json()["error"]["type"] == "server_error"
