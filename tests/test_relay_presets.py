"""OpenAI-compatible vendors through the gateway: the official ``openai`` SDK calls the
gateway, whose channel of a preset type (faregate_adapter_openai.presets) calls a fake OpenAI
made into that vendor's API (``Vendor``: its root, what it refuses, when it reports a
stream's usage). Each kind of quirk once: ``stream_options`` kept from a vendor that refuses
it while the stream is still billed (on the usage it sends anyway, else on the estimate),
refused and renamed fields, a vendor root (the model list fetched from there too), an account
id in the URL, new-api's whole-URL Custom channel, and a converted request (the Anthropic SDK)
following the same rules."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anthropic
import openai
import pytest

from faregate import jsonutil
from faregate.db import models as m
from faregate.testing.harness import AdminClient
from faregate_adapter_openai.testing import REPLY_PREFIX, FakeOpenAI
from faregate_adapter_openai.testing.server import Vendor

MODEL = "vendor-model"
RATIO = 1.0


async def rows(gateway: Any) -> list[m.Log]:
    await gateway.gateway.ledger.flush()
    return list(await m.Log.filter(type=m.LOG_CONSUME).order_by("id"))


def other(row: m.Log) -> dict[str, Any]:
    value: dict[str, Any] = jsonutil.loads(row.other)
    return value


@pytest.fixture
async def make_fake() -> AsyncIterator[Callable[..., Awaitable[FakeOpenAI]]]:
    """``await make_fake(**vendor)``: a fake OpenAI made into that vendor (:class:`Vendor`);
    a request it refused fails the test at teardown."""
    fakes: list[FakeOpenAI] = []

    async def make(**vendor: Any) -> FakeOpenAI:
        fake = FakeOpenAI(api_key="sk-vendor-key", models=[MODEL], vendor=Vendor(**vendor))
        await fake.start()
        fakes.append(fake)
        return fake

    yield make
    for fake in fakes:
        await fake.stop()
        assert not fake.violations, fake.violations


async def sdk_for(gateway: Any, admin: AdminClient, fake: FakeOpenAI, channel_type: int,
                  **channel: Any) -> openai.AsyncOpenAI:
    await admin.set_option("ModelRatio", {MODEL: RATIO})
    await admin.add_channel(base_url=channel.pop("base_url", fake.base_url), models=MODEL, key="sk-vendor-key",
                            type=channel_type, **channel)
    return openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(remain_quota=10**7),
                              max_retries=0)


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


# ---- stream_options -----------------------------------------------------------------------
async def test_mistral_gets_no_stream_options_and_the_stream_is_billed_on_its_own_usage(
        gateway: Any, admin: AdminClient, make_fake: Any) -> None:
    vendor_fake = await make_fake(refuses=frozenset({"stream_options", "user", "max_completion_tokens", "seed"}),
                    usage_chunk="always")
    client = await sdk_for(gateway, admin, vendor_fake, 42)
    stream = await client.chat.completions.create(model=MODEL, messages=ask("stream to mistral"), stream=True,
                                                  stream_options={"include_usage": True}, user="u-1", seed=4,
                                                  max_completion_tokens=200)
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == REPLY_PREFIX + "stream to mistral"
    sent = vendor_fake.requests[-1]["json"]
    assert "stream_options" not in sent and "user" not in sent and "max_completion_tokens" not in sent
    assert (sent["max_tokens"], sent["random_seed"]) == (200, 4)
    usage = next(c.usage for c in chunks if c.usage is not None)  # the vendor sends it unasked: passed on
    (row,) = await rows(gateway)
    assert (row.prompt_tokens, row.completion_tokens) == (usage.prompt_tokens, usage.completion_tokens)
    assert other(row)["usage_source"] == "upstream" and row.quota == usage.prompt_tokens + usage.completion_tokens


async def test_a_vendor_without_stream_usage_is_billed_on_the_estimate(
        gateway: Any, admin: AdminClient, make_fake: Any) -> None:
    vendor_fake = await make_fake(refuses=frozenset({"stream_options"}), usage_chunk="never")
    client = await sdk_for(gateway, admin, vendor_fake, 31)  # 01.AI: new-api sends it no stream_options
    stream = await client.chat.completions.create(model=MODEL, messages=ask("a quiet stream"), stream=True)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == REPLY_PREFIX + "a quiet stream"
    assert "stream_options" not in vendor_fake.requests[-1]["json"]
    (row,) = await rows(gateway)
    assert other(row)["usage_source"] == "estimated" and other(row)["end_reason"] == "done"
    assert row.completion_tokens > 0 and row.quota == row.prompt_tokens + row.completion_tokens


async def test_a_vendor_that_takes_stream_options_is_asked_for_usage(
        gateway: Any, admin: AdminClient, make_fake: Any) -> None:
    vendor_fake = await make_fake()
    client = await sdk_for(gateway, admin, vendor_fake, 43)  # DeepSeek
    stream = await client.chat.completions.create(model=MODEL, messages=ask("hi"), stream=True,
                                                  max_completion_tokens=50)
    chunks = [c async for c in stream]
    assert all(c.usage is None for c in chunks)  # the client did not ask: the usage chunk is held back
    sent = vendor_fake.requests[-1]["json"]
    assert sent["stream_options"] == {"include_usage": True} and sent["max_tokens"] == 50
    (row,) = await rows(gateway)
    assert other(row)["usage_source"] == "upstream"


# ---- refused fields, a vendor's root, its model list -----------------------------------------
async def test_groq_at_its_root_loses_what_it_refuses(
        gateway: Any, admin: AdminClient, make_fake: Any) -> None:
    vendor_fake = await make_fake(root="/openai/v1", refuses=frozenset({"logprobs", "logit_bias", "top_logprobs"}))
    client = await sdk_for(gateway, admin, vendor_fake, 1001)
    reply = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "named", "name": "ann"}], logprobs=True, top_logprobs=2)
    assert reply.choices[0].message.content == REPLY_PREFIX + "named"
    request = vendor_fake.requests[-1]
    assert request["path"] == "/openai/v1/chat/completions"
    assert request["json"]["messages"] == [{"role": "user", "content": "named"}]  # Groq refuses messages[].name
    assert "logprobs" not in request["json"] and "top_logprobs" not in request["json"]
    (row,) = await rows(gateway)
    assert row.completion_tokens == reply.usage.completion_tokens  # type: ignore[union-attr]
    channel_id = (await admin.ok("GET", "/api/channel/"))["items"][0]["id"]
    listed = await admin.ok("GET", f"/api/channel/fetch_models/{channel_id}")
    assert MODEL in listed and vendor_fake.requests[-1]["path"] == "/openai/v1/models"


async def test_zhipu_embeddings_and_chat_at_its_root(
        gateway: Any, admin: AdminClient, make_fake: Any) -> None:
    vendor_fake = await make_fake(root="/api/paas/v4", lists_models=False)
    client = await sdk_for(gateway, admin, vendor_fake, 26, base_url=vendor_fake.base_url + "/api/paas/v4")
    embedded = await client.embeddings.create(model=MODEL, input="vector me")
    assert embedded.data and vendor_fake.requests[-1]["path"] == "/api/paas/v4/embeddings"
    await client.chat.completions.create(model=MODEL, messages=ask("hi"), max_completion_tokens=40)
    assert vendor_fake.requests[-1]["json"]["max_tokens"] == 40
    assert "max_completion_tokens" not in vendor_fake.requests[-1]["json"]
    channel_id = (await admin.ok("GET", "/api/channel/"))["items"][0]["id"]
    refused = await admin.call("GET", f"/api/channel/fetch_models/{channel_id}")
    assert refused["success"] is False and "cannot list" in refused["message"]
    with pytest.raises(openai.BadRequestError) as unserved:  # Zhipu's preset serves no images
        await client.images.generate(model=MODEL, prompt="a cat")
    assert unserved.value.code == "endpoint_not_supported"


async def test_cloudflare_puts_the_account_from_other_in_the_path(
        gateway: Any, admin: AdminClient, make_fake: Any) -> None:
    vendor_fake = await make_fake(root="/client/v4/accounts/0a1b2c3d4e5f/ai/v1", lists_models=False)
    client = await sdk_for(gateway, admin, vendor_fake, 39, other="0a1b2c3d4e5f")
    reply = await client.chat.completions.create(model=MODEL, messages=ask("workers"))
    assert reply.choices[0].message.content == REPLY_PREFIX + "workers"
    assert vendor_fake.requests[-1]["path"] == "/client/v4/accounts/0a1b2c3d4e5f/ai/v1/chat/completions"


async def test_custom_takes_new_api_s_whole_chat_url(
        gateway: Any, admin: AdminClient, make_fake: Any) -> None:
    vendor_fake = await make_fake(root="/serve/v1")
    client = await sdk_for(gateway, admin, vendor_fake, 8, base_url=vendor_fake.base_url + "/serve/v1/chat/completions")
    reply = await client.chat.completions.create(model=MODEL, messages=ask("custom"))
    assert reply.choices[0].message.content == REPLY_PREFIX + "custom"
    await client.embeddings.create(model=MODEL, input="beside it")
    assert [r["path"] for r in vendor_fake.requests[-2:]] == ["/serve/v1/chat/completions", "/serve/v1/embeddings"]


# ---- a converted request follows the same rules ------------------------------------------------
async def test_an_anthropic_client_to_mistral(
        gateway: Any, admin: AdminClient, make_fake: Any) -> None:
    vendor_fake = await make_fake(refuses=frozenset({"stream_options", "max_completion_tokens", "seed"}),
                                  usage_chunk="always")
    await sdk_for(gateway, admin, vendor_fake, 42)
    key = await admin.add_token(name="claude", remain_quota=10**7)
    client = anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=key, max_retries=0)
    async with client.messages.stream(model=MODEL, max_tokens=64, messages=ask("from claude")) as stream:
        text = "".join([t async for t in stream.text_stream])
        final = await stream.get_final_message()
    await client.close()
    assert text == REPLY_PREFIX + "from claude"
    sent = vendor_fake.requests[-1]["json"]
    assert sent["max_tokens"] == 64 and "stream_options" not in sent and "max_completion_tokens" not in sent
    (row,) = await rows(gateway)
    assert row.completion_tokens == final.usage.output_tokens and other(row)["usage_source"] == "upstream"
