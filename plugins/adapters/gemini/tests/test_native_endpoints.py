"""The native routes besides generation: ``embedContent`` / ``batchEmbedContents`` (Gemini
channels only, billed on the upstream's usage or the gateway's estimate), ``countTokens``
(a local estimate, free), and every bad input refused with a 400 in Gemini's shape that
names the field, before anything goes upstream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from faregate.testing.logs import consume_logs
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_gemini.testing import EMBEDDING, FLASH
from faregate_adapter_gemini.testing.fixtures import FAKE_GEMINI_KEY
from faregate_adapter_gemini.testing.schema import (
    validate_batch_embed_response,
    validate_count_tokens_response,
    validate_embed_response,
    validate_error,
)

CONTENT = {"parts": [{"text": "embed these words"}]}


async def post(deployed: Any, path: str, body: Any, **params: str) -> Any:
    return await deployed.http().post(path, json=body, params=params, headers={"x-goog-api-key": deployed.key})


def field_of(resp: Any) -> str:
    assert resp.status_code == 400, resp.text
    details = validate_error(resp.json())["error"]["details"]
    return str(details[0]["fieldViolations"][0]["field"])


@pytest.mark.parametrize("usage", [True, False])
async def test_embed_content_billed_on_usage_or_estimate(deployed: Any, usage: bool) -> None:
    deployed.fake.embedding_usage = usage
    resp = await post(deployed, f"/v1beta/models/{EMBEDDING}:embedContent",
                      {"content": CONTENT, "taskType": "RETRIEVAL_QUERY", "outputDimensionality": 6})
    assert resp.status_code == 200, resp.text
    assert len(validate_embed_response(resp.json())["embedding"]["values"]) == 6
    (row,) = await consume_logs(deployed.server)
    other = json.loads(row.other)
    assert row.model_name == EMBEDDING and row.prompt_tokens > 0 and row.completion_tokens == 0
    assert other["usage_source"] == ("upstream" if usage else "estimated")
    if usage:
        assert row.prompt_tokens == resp.json()["usageMetadata"]["promptTokenCount"]


async def test_batch_embed_with_a_mapped_model(deployed: Any) -> None:
    await deployed.admin.add_channel(base_url=deployed.fake.base_url, type=24, key=FAKE_GEMINI_KEY, name="emb",
                                     models="my-embedder", model_mapping=json.dumps({"my-embedder": EMBEDDING}))
    await deployed.admin.set_option("ModelRatio", {"my-embedder": 0.05})
    body = {"requests": [{"model": "models/my-embedder", "content": CONTENT},
                         {"model": "models/my-embedder", "content": {"parts": [{"text": "more"}]}}]}
    resp = await post(deployed, "/v1/models/my-embedder:batchEmbedContents", body)
    assert resp.status_code == 200, resp.text
    assert len(validate_batch_embed_response(resp.json())["embeddings"]) == 2
    sent = deployed.fake.requests[-1]
    assert sent["path"] == f"/v1beta/models/{EMBEDDING}:batchEmbedContents"
    assert [r["model"] for r in sent["json"]["requests"]] == [f"models/{EMBEDDING}"] * 2
    (row,) = await consume_logs(deployed.server)
    assert row.model_name == "my-embedder"


async def test_embeddings_go_only_to_channels_that_embed(deployed: Any, fake_anthropic: Any) -> None:
    """A channel that serves neither Gemini's embeddings nor OpenAI's (converted, see
    test_embeddings_across_formats) is never chosen: a model only it serves is a 400."""
    await deployed.admin.add_channel(base_url=fake_anthropic.base_url, models="claude-sonnet-4-5", type=14,
                                     name="anthropic", key=FAKE_ANTHROPIC_KEY)
    resp = await post(deployed, "/v1beta/models/claude-sonnet-4-5:embedContent", {"content": CONTENT})
    assert resp.status_code == 400
    error = validate_error(resp.json())["error"]
    assert "gemini_embeddings" in error["message"] and fake_anthropic.requests == []


BAD_EMBEDS = [
    (":embedContent", {}, "content"),
    (":embedContent", {"content": CONTENT, "model": "models/other"}, "model"),
    (":embedContent", {"content": CONTENT, "outputDimensionality": 0}, "outputDimensionality"),
    (":embedContent", {"content": {"parts": []}}, "content.parts"),
    (":batchEmbedContents", {"requests": []}, "requests"),
    (":batchEmbedContents", {"requests": [{"content": CONTENT}, 5]}, "requests[1]"),
]


async def test_bad_embed_requests(deployed: Any) -> None:
    for path, body, field in BAD_EMBEDS:  # one gateway for all: each case is one request
        assert field_of(await post(deployed, f"/v1beta/models/{EMBEDDING}{path}", body)) == field, (path, body)
    assert deployed.fake.requests == []


async def test_count_tokens(deployed: Any) -> None:
    small = validate_count_tokens_response((await post(deployed, f"/v1beta/models/{FLASH}:countTokens",
                                                       {"contents": [CONTENT]})).json())
    big = validate_count_tokens_response((await post(
        deployed, f"/v1/models/{FLASH}:countTokens",
        {"generateContentRequest": {"contents": [CONTENT] * 4, "systemInstruction": CONTENT}})).json())
    assert 0 < small["totalTokens"] < big["totalTokens"]
    assert field_of(await post(deployed, f"/v1beta/models/{FLASH}:countTokens", {})) == "contents"
    both = {"contents": [CONTENT], "generateContentRequest": {"contents": [CONTENT]}}
    assert field_of(await post(deployed, f"/v1beta/models/{FLASH}:countTokens", both)) == "contents"
    assert deployed.fake.requests == [] and await consume_logs(deployed.server) == []


async def test_count_tokens_respects_the_keys_model_limits(deployed: Any) -> None:
    limited = await deployed.admin.add_token(remain_quota=1000, model_limits_enabled=True, model_limits=EMBEDDING)
    resp = await deployed.http().post(f"/v1beta/models/{FLASH}:countTokens", json={"contents": [CONTENT]},
                                      headers={"x-goog-api-key": limited})
    assert resp.status_code == 403 and validate_error(resp.json())["error"]["status"] == "PERMISSION_DENIED"


TEXT = {"parts": [{"text": "x"}]}


BAD_GENERATES = [
    ({}, "contents"),
    ({"contents": "hello"}, "contents"),
    ({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}, "contents[0].role"),
    ({"contents": [{"parts": [{"text": "x", "inlineData": {"mimeType": "image/png", "data": "AA=="}}]}]},
     "contents[0].parts[0]"),
    ({"contents": [{"parts": [{"inlineData": {"mimeType": "image/png"}}]}]}, "contents[0].parts[0].inlineData.data"),
    ({"contents": [{"parts": [{"functionCall": {"args": {}}}]}]}, "contents[0].parts[0].functionCall.name"),
    ({"contents": [TEXT], "generationConfig": {"temperature": 3}}, "generationConfig.temperature"),
    ({"contents": [TEXT], "generationConfig": {"topK": 0}}, "generationConfig.topK"),
    ({"contents": [TEXT], "generation_config": {"max_output_tokens": 0}}, "generationConfig.maxOutputTokens"),
    ({"contents": [TEXT], "generationConfig": {"candidateCount": 9}}, "generationConfig.candidateCount"),
    ({"contents": [TEXT], "generationConfig": {"stopSequences": list("abcdef")}}, "generationConfig.stopSequences"),
    ({"contents": [TEXT], "generationConfig": {"thinkingConfig": {"thinkingBudget": -2}}},
     "generationConfig.thinkingConfig.thinkingBudget"),
    ({"contents": [TEXT], "generationConfig": {"thinkingConfig": {"thinkingLevel": "EXTREME"}}},
     "generationConfig.thinkingConfig.thinkingLevel"),
    ({"contents": [TEXT], "tools": {"functionDeclarations": []}}, "tools"),
    ({"contents": [TEXT], "tools": [{"functionDeclarations": [{"description": "no name"}]}]},
     "tools[0].functionDeclarations[0].name"),
    ({"contents": [TEXT], "toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}}},
     "toolConfig.functionCallingConfig.mode"),
    ({"contents": [TEXT], "safetySettings": [{"threshold": "BLOCK_NONE"}]}, "safetySettings[0].category"),
    ({"contents": [TEXT], "systemInstruction": "be nice"}, "systemInstruction"),
]


async def test_bad_generate_requests_name_the_field(deployed: Any) -> None:
    for body, field in BAD_GENERATES:
        for action in ("generateContent", "streamGenerateContent"):
            resp = await post(deployed, f"/v1beta/models/{FLASH}:{action}", body)
            assert field_of(resp) == field, (body, resp.text)
    assert deployed.fake.requests == [] and await consume_logs(deployed.server) == []


async def test_an_alt_the_gateway_does_not_serve(deployed: Any) -> None:
    resp = await post(deployed, f"/v1beta/models/{FLASH}:streamGenerateContent", {"contents": [TEXT]}, alt="proto")
    assert field_of(resp) == "alt"


async def test_actions_the_gateway_does_not_serve(deployed: Any) -> None:
    for path in (f"/v1beta/models/{FLASH}:batchGenerateContent", f"/v1/models/{FLASH}:predict"):
        resp = await post(deployed, path, {"requests": []})
        assert resp.status_code == 501 and validate_error(resp.json())["error"]["status"] == "UNIMPLEMENTED"
    anonymous = await deployed.http().post(f"/v1beta/models/{FLASH}:predict", json={})
    assert anonymous.status_code == 401
    assert deployed.fake.requests == []


async def test_the_channel_test_of_embeddings_calls_embed_content(deployed: Any) -> None:
    """``GET /api/channel/test/{id}`` of new-api's ``embeddings`` endpoint type: one
    ``embedContent`` of the Gemini channel (its embeddings are Gemini's own), chosen by the
    model's name or asked for; chat stays ``generateContent``."""
    fake, path = deployed.fake, f"/api/channel/test/{deployed.channel}"
    answer = await deployed.admin.call("GET", path, params={"model": EMBEDDING})
    assert answer["success"] is True, answer
    sent = fake.requests[-1]
    assert sent["path"] == f"/v1beta/models/{EMBEDDING}:embedContent"
    assert sent["json"]["content"] == {"parts": [{"text": "hi"}]}
    answer = await deployed.admin.call("GET", path, params={"model": EMBEDDING, "endpoint_type": "embeddings"})
    assert answer["success"] is True and fake.requests[-1]["path"].endswith(":embedContent")
    assert (await deployed.admin.call("GET", path, params={"model": FLASH}))["success"] is True
    assert fake.requests[-1]["path"] == f"/v1beta/models/{FLASH}:generateContent"
    refused = await deployed.admin.call("GET", path, params={"endpoint_type": "jina-rerank"})
    assert refused["success"] is False and "does not serve the rerank endpoint" in refused["message"]
