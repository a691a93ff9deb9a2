"""``POST /v1/embeddings`` (and new-api's ``/v1/engines/{model}/embeddings``) through the
gateway with the official ``openai`` SDK as client (strict response validation, async and
sync; the SDK's default base64 answers validated raw, see :func:`base64_sdk`): base64 and float
answers, dimensions, token-array input, billing on the upstream's usage, and channel selection
by capability: an Anthropic channel of the same model is never chosen for embeddings, and a
model only such channels serve gets an error naming the endpoint. OpenAI-shaped 400s for bad
input: test_relay_embeddings_refused.py."""

from __future__ import annotations

import asyncio
import base64
import struct
from typing import Any

import httpx
import openai
import pytest

from faregate_adapter_openai.testing.answers import answer_of, check_answer
from faregate_adapter_openai.testing.embeddings import vector
from faregate_adapter_openai.testing.schema import EMBEDDINGS_RESPONSE, validate

MODEL = "text-embedding-3-small"
RATIO = 0.01


@pytest.fixture
async def client(gateway: Any, admin: Any, fake_openai: Any) -> Any:
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{MODEL},text-embedding-ada-002",
                            model_mapping='{"text-embedding-ada-002": "text-embedding-3-large"}')
    key = await admin.add_token(remain_quota=5_000_000)
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                             _strict_response_validation=True)
    sdk.key = key  # type: ignore[attr-defined]
    yield sdk
    await sdk.close()


def base64_sdk(gateway: Any, key: str) -> openai.AsyncOpenAI:
    """A client for the SDK's default (base64) answers, without strict validation: the SDK types an
    embedding as floats and checks that before it decodes base64 (a real OpenAI answer fails the same
    way). The raw answer is validated instead, decoded, against OpenAI's schema (:func:`check_answer`)."""
    return openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)



async def test_sdk_default_base64_is_relayed_unchanged_and_billed(client: Any, gateway: Any,
                                                                  fake_openai: Any) -> None:
    async with base64_sdk(gateway, client.key) as sdk:
        raw = await sdk.embeddings.with_raw_response.create(model=MODEL, input=["hello world", "second input here"])
    assert isinstance(raw.http_response.json()["data"][0]["embedding"], str)
    check_answer(answer_of(raw.http_response))
    result = raw.parse()
    assert [len(d.embedding) for d in result.data] == [16, 16]
    assert result.data[0].embedding == pytest.approx(vector("hello world", 16))
    assert result.data[1].embedding == pytest.approx(vector("second input here", 16))
    sent = fake_openai.requests[-1]["json"]
    assert sent["encoding_format"] == "base64" and sent["input"] == ["hello world", "second input here"]
    (row,) = await gateway.consume_logs()
    assert (row.model_name, row.prompt_tokens, row.completion_tokens) == (MODEL, 5, 0)
    assert row.quota == max(1, round(5 * RATIO))


async def test_float_dimensions_and_token_arrays(client: Any, fake_openai: Any, gateway: Any) -> None:
    raw = await client.embeddings.with_raw_response.create(model=MODEL, input=[[1, 2, 3], [4, 5]],
                                                           encoding_format="float", dimensions=8)
    body = validate(EMBEDDINGS_RESPONSE, raw.http_response.json())
    assert [len(d["embedding"]) for d in body["data"]] == [8, 8]
    assert body["data"][1]["embedding"] == pytest.approx(vector([4, 5], 8))
    assert raw.http_response.headers["x-request-id"]
    assert body["usage"]["prompt_tokens"] == 5


async def test_the_sync_sdk_works_too(client: Any, gateway: Any) -> None:
    def call() -> tuple[Any, Any]:
        with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=client.key, max_retries=0,
                           _strict_response_validation=True) as sync:
            floats = sync.embeddings.create(model=MODEL, input="from a thread", encoding_format="float")
        with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=client.key, max_retries=0) as lenient:
            raw = lenient.embeddings.with_raw_response.create(model=MODEL, input="base64 from a thread")
        check_answer(answer_of(raw.http_response))  # see base64_sdk
        return floats, raw.parse()

    floats, decoded = await asyncio.to_thread(call)
    assert floats.data[0].embedding == pytest.approx(vector("from a thread", 16))
    assert decoded.data[0].embedding == pytest.approx(vector("base64 from a thread", 16))
    assert [row.model_name for row in await gateway.consume_logs()] == [MODEL, MODEL]


async def test_engines_path_and_model_mapping(client: Any, fake_openai: Any, gateway: Any) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post(f"/v1/engines/{MODEL}/embeddings", json={"input": "from the path"},
                               headers={"Authorization": f"Bearer {client.key}"})
    assert resp.status_code == 200, resp.text
    check_answer(answer_of(resp))
    assert fake_openai.requests[-1]["json"]["model"] == MODEL  # the path's model, put in the body
    await client.embeddings.create(model="text-embedding-ada-002", input="mapped", encoding_format="float")
    assert fake_openai.requests[-1]["json"]["model"] == "text-embedding-3-large"
    (_, second) = await gateway.consume_logs()
    assert second.model_name == "text-embedding-ada-002"


async def test_only_channels_that_serve_embeddings_are_chosen(gateway: Any, admin: Any, fake_openai: Any,
                                                             fake_anthropic: Any) -> None:
    # an Anthropic channel of higher priority for the same model: chat could use it, embeddings cannot
    await admin.add_channel(base_url=fake_anthropic.base_url, models=f"{MODEL},claude-sonnet-4-5", type=14,
                            name="anthropic", priority=10)
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, name="openai")
    key = await admin.add_token(remain_quota=5_000_000)
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                             _strict_response_validation=True)
    try:
        for _ in range(3):
            assert (await sdk.embeddings.create(model=MODEL, input="x", encoding_format="float")).data
        assert not fake_anthropic.requests
        with pytest.raises(openai.BadRequestError) as refused:
            await sdk.embeddings.create(model="claude-sonnet-4-5", input="x")
        assert "embeddings" in refused.value.message and refused.value.code == "endpoint_not_supported"
    finally:
        await sdk.close()


def test_base64_is_little_endian_float32() -> None:
    """What the SDK decodes: the fake sends OpenAI's encoding."""
    from faregate.jsonutil import loads
    from faregate_adapter_openai.testing.embeddings import embeddings_body

    body = loads(embeddings_body({"model": MODEL, "input": "abc", "encoding_format": "base64", "dimensions": 4}))
    decoded = struct.unpack("<4f", base64.b64decode(body["data"][0]["embedding"]))
    assert list(decoded) == vector("abc", 4)


async def test_a_chat_only_vendor_channel_is_not_chosen_for_embeddings(gateway: Any, admin: Any,
                                                                       fake_openai: Any) -> None:
    """DeepSeek (type 43) speaks OpenAI's format but serves no embeddings: its channel,
    though of higher priority, is skipped; alone, the model gets the endpoint's error."""
    await admin.set_option("ModelRatio", {MODEL: RATIO, "deepseek-chat": 0.5})
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{MODEL},deepseek-chat", type=43,
                            name="deepseek", priority=10)
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, name="openai")
    key = await admin.add_token(remain_quota=5_000_000)
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                             _strict_response_validation=True)
    try:
        await sdk.embeddings.create(model=MODEL, input="x", encoding_format="float")
        (row,) = await gateway.consume_logs()
        channels = {c["name"]: c["id"] for c in (await admin.ok("GET", "/api/channel/"))["items"]}
        assert row.channel_id == channels["openai"]
        with pytest.raises(openai.BadRequestError) as refused:
            await sdk.embeddings.create(model="deepseek-chat", input="x")
        assert refused.value.code == "endpoint_not_supported" and "43" in refused.value.message
        assert (await sdk.chat.completions.create(model="deepseek-chat",
                                                  messages=[{"role": "user", "content": "hi"}])).choices
    finally:
        await sdk.close()
