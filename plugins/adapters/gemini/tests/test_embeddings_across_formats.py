"""Embeddings across formats (issue 28, item 11), as new-api converts them: the google-genai
SDK's ``embed_content`` for a model on an OpenAI channel (``batchEmbedContents`` →
``POST /v1/embeddings`` → ``{"embeddings": [...]}``), and the openai SDK's
``embeddings.create`` for a model on a Gemini channel (→ ``batchEmbedContents`` → OpenAI's
list with usage). The fakes check each converted request against their vendor's schema;
billing is the embeddings paths' own: the upstream's usage, else the gateway's count."""

from __future__ import annotations

import base64
import struct
from typing import Any

import openai
import pytest
from google.genai import errors as genai_errors
from google.genai import types

from faregate.testing.logs import consume_logs
from faregate_adapter_gemini.testing import EMBEDDING
from faregate_adapter_gemini.testing.answers import EMBEDDING_DIMENSIONS, embedding
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.embeddings import DEFAULT_DIMENSIONS, vector
from faregate_adapter_openai.testing.schema import validate as validate_openai

OPENAI_EMBEDDING = "text-embedding-3-small"


@pytest.fixture
async def openai_channel(deployed: Any, fake_openai: FakeOpenAI) -> FakeOpenAI:
    await deployed.admin.add_channel(base_url=fake_openai.base_url, models=OPENAI_EMBEDDING, name="openai")
    return fake_openai


# ---- a Gemini client, an OpenAI channel ---------------------------------------------------------
async def test_embed_content_on_an_openai_channel(deployed: Any, openai_channel: FakeOpenAI) -> None:
    client = deployed.genai()
    result = await client.aio.models.embed_content(model=OPENAI_EMBEDDING, contents=["hello there", "and you"])
    sent = openai_channel.requests[-1]
    assert sent["path"] == "/v1/embeddings"
    assert sent["json"] == {"model": OPENAI_EMBEDDING, "input": ["hello there", "and you"],
                            "encoding_format": "float"}
    assert result.embeddings is not None
    assert [e.values for e in result.embeddings] == [vector("hello there", DEFAULT_DIMENSIONS),
                                                     vector("and you", DEFAULT_DIMENSIONS)]
    (row,) = await consume_logs(deployed.server)
    assert (row.model_name, row.prompt_tokens) == (OPENAI_EMBEDDING, 4)  # the fake's count: a token a word


async def test_embed_content_with_dimensions_and_the_single_action(deployed: Any, openai_channel: FakeOpenAI) -> None:
    resp = await deployed.http().post(f"/v1beta/models/{OPENAI_EMBEDDING}:embedContent",
                                      json={"content": {"parts": [{"text": "one"}, {"text": "two"}]},
                                            "outputDimensionality": "4", "taskType": "RETRIEVAL_QUERY"},
                                      headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 200, resp.text
    assert openai_channel.requests[-1]["json"] == {"model": OPENAI_EMBEDDING, "input": ["one\ntwo"],
                                                   "encoding_format": "float", "dimensions": 4}
    answer = resp.json()
    assert answer["embedding"]["values"] == vector("one\ntwo", 4)
    assert answer["usageMetadata"] == {"promptTokenCount": 2}  # the fake's count: a token a word


async def test_what_openai_cannot_embed_is_a_400_naming_it(deployed: Any, openai_channel: FakeOpenAI) -> None:
    client = deployed.genai()
    image = types.Part.from_bytes(data=b"\x89PNG\r\n\x1a\n" + bytes(16), mime_type="image/png")
    with pytest.raises(genai_errors.ClientError) as caught:
        await client.aio.models.embed_content(model=OPENAI_EMBEDDING, contents=types.Content(parts=[image]))
    assert caught.value.code == 400 and "content.parts[0]" in str(caught.value.message)
    assert openai_channel.requests == []


# ---- an OpenAI client, a Gemini channel ---------------------------------------------------------
def floats(encoded: str) -> list[float]:
    data = base64.b64decode(encoded)
    return list(struct.unpack(f"<{len(data) // 4}f", data))


async def test_openai_embeddings_on_a_gemini_channel(deployed: Any) -> None:
    client = deployed.openai()
    raw = await client.embeddings.with_raw_response.create(model=EMBEDDING, input=["hello there", "and you"])
    answer = raw.http_response.json()  # base64: the spec types only the float form
    result = raw.parse()
    sent = deployed.fake.requests[-1]
    assert sent["path"].endswith(f"/models/{EMBEDDING}:batchEmbedContents")
    assert sent["json"] == {"requests": [
        {"model": f"models/{EMBEDDING}", "content": {"parts": [{"text": "hello there"}]}},
        {"model": f"models/{EMBEDDING}", "content": {"parts": [{"text": "and you"}]}}]}
    # the SDK asks base64 by default and decodes it: float32, as OpenAI packs them
    expected = [embedding({"parts": [{"text": t}]}, None)["values"] for t in ("hello there", "and you")]
    for item, values in zip(answer["data"], expected, strict=True):
        assert floats(item["embedding"]) == pytest.approx(values, abs=1e-6)
    assert [len(item.embedding) for item in result.data] == [EMBEDDING_DIMENSIONS] * 2
    assert result.model == EMBEDDING and result.usage.prompt_tokens > 0
    (row,) = await consume_logs(deployed.server)  # no usage upstream: the gateway's count
    assert (row.model_name, row.prompt_tokens) == (EMBEDDING, result.usage.prompt_tokens)


async def test_openai_embeddings_with_dimensions_and_the_upstreams_usage(deployed: Any) -> None:
    deployed.fake.embedding_usage = True
    raw = await deployed.openai().embeddings.with_raw_response.create(model=EMBEDDING, input="hello", dimensions=4,
                                                                      encoding_format="float")
    validate_openai("CreateEmbeddingResponse", raw.http_response.json())
    result = raw.parse()
    assert deployed.fake.requests[-1]["json"]["requests"][0]["outputDimensionality"] == 4
    assert result.data[0].embedding == embedding({"parts": [{"text": "hello"}]}, 4)["values"]
    (row,) = await consume_logs(deployed.server)
    assert row.prompt_tokens == result.usage.prompt_tokens


async def test_token_ids_are_a_400_on_a_gemini_channel(deployed: Any) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await deployed.openai().embeddings.create(model=EMBEDDING, input=[[1, 2, 3]])
    assert caught.value.param == "input"
    assert deployed.fake.requests == []
