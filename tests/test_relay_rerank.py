"""Rerank (``POST /v1/rerank``, new-api's Jina/Cohere shape) through the gateway with raw
httpx (the OpenAI SDK has no rerank method) and the fake Jina upstream, which validates
every request against Jina's documented request shape: top_n and return_documents, string
and object documents, the answer normalised as new-api's, OpenAI-shaped 400s, billing on
the upstream's total_tokens or the estimate, failover, and which channel types serve it
(Jina 38, SiliconFlow 40, Custom 8; not Anthropic, not DeepSeek). The Jina channel type
also serves embeddings (the official SDK as client) and nothing else."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import openai
import pytest

from faregate import jsonutil
from faregate.api import estimator
from faregate_adapter_openai.testing import Fault
from faregate_adapter_openai.testing.embeddings import vector
from faregate_adapter_openai.testing.jina import FakeJina
from faregate_adapter_openai.testing.schema import validate_error

MODEL = "jina-reranker-v2-base-multilingual"
RATIO = 0.01
QUERY = "organic skincare for sensitive skin"
DOCUMENTS = [
    "New makeup trends focus on bold colors",
    "Organic skincare for sensitive skin with aloe vera",
    "Skincare tips for dry skin",
    "A guide to sensitive topics",
]


def words(text: str) -> int:
    return len(text.split())


@pytest.fixture
async def key(gateway: Any, admin: Any, fake_jina: FakeJina) -> str:
    await admin.set_option("ModelRatio", {MODEL: RATIO, "bge-reranker": RATIO, "jina-embeddings-v3": 0.01})
    await admin.add_channel(base_url=fake_jina.base_url, models=f"{MODEL},jina-embeddings-v3,bge-reranker",
                            type=38, name="jina", model_mapping='{"bge-reranker": "' + MODEL + '"}')
    return await admin.add_token(remain_quota=5_000_000)


async def rerank(gateway: Any, key: str, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        return await http.post("/v1/rerank", json=body, headers={"Authorization": f"Bearer {key}"})



def check_answer(answer: Any) -> None:
    """new-api's RerankResponse: results of index, relevance_score (, document), usage."""
    assert set(answer) == {"results", "usage"}
    for result in answer["results"]:
        assert set(result) <= {"index", "relevance_score", "document"}
        assert isinstance(result["index"], int) and isinstance(result["relevance_score"], float)
    usage = answer["usage"]
    assert usage["completion_tokens"] == 0 and usage["prompt_tokens"] == usage["total_tokens"] > 0


async def test_rerank_is_relayed_normalised_and_billed_on_usage(gateway: Any, key: str,
                                                                fake_jina: FakeJina) -> None:
    resp = await rerank(gateway, key, {"model": MODEL, "query": QUERY, "documents": DOCUMENTS, "top_n": 3})
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    check_answer(answer)
    # the documents sharing the most of the query's words come first; top_n of them
    assert [r["index"] for r in answer["results"]] == [1, 2, 3]
    scores = [r["relevance_score"] for r in answer["results"]]
    assert scores == sorted(scores, reverse=True)
    assert [r["document"] for r in answer["results"]] == [{"text": DOCUMENTS[i]} for i in (1, 2, 3)]  # Jina's default
    total = words(QUERY) + sum(words(d) for d in DOCUMENTS)  # what Jina reports: total_tokens only
    assert answer["usage"]["total_tokens"] == total
    assert resp.headers["x-request-id"]
    assert fake_jina.requests[-1]["json"] == {"model": MODEL, "query": QUERY, "documents": DOCUMENTS, "top_n": 3}
    (row,) = await gateway.consume_logs()
    assert (row.model_name, row.prompt_tokens, row.completion_tokens) == (MODEL, total, 0)
    assert row.quota == max(1, round(total * RATIO))
    assert jsonutil.loads(row.other)["usage_source"] == "upstream"


async def test_return_documents_object_documents_and_undeclared_fields(gateway: Any, key: str,
                                                                       fake_jina: FakeJina) -> None:
    docs = [{"text": d} for d in DOCUMENTS]
    resp = await rerank(gateway, key, {"model": "bge-reranker", "query": "bold makeup", "documents": docs,
                                       "return_documents": False, "max_chunk_per_doc": 3, "extra": {"x": 1}})
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    check_answer(answer)
    assert len(answer["results"]) == len(DOCUMENTS) and answer["results"][0]["index"] == 0
    assert all("document" not in r for r in answer["results"])
    # the declared fields only, under the channel's model name (Jina refuses others: the fake too)
    assert fake_jina.requests[-1]["json"] == {"model": MODEL, "query": "bold makeup", "documents": docs,
                                              "return_documents": False}
    (row,) = await gateway.consume_logs()
    assert row.model_name == "bge-reranker"


BAD_INPUT: list[tuple[Any, str]] = [
    ({"query": QUERY, "documents": DOCUMENTS}, "model"),
    ({"model": MODEL, "documents": DOCUMENTS}, "query"),
    ({"model": MODEL, "query": "", "documents": DOCUMENTS}, "query"),
    ({"model": MODEL, "query": {"text": QUERY}, "documents": DOCUMENTS}, "query"),
    ({"model": MODEL, "query": QUERY}, "documents"),
    ({"model": MODEL, "query": QUERY, "documents": []}, "documents"),
    ({"model": MODEL, "query": QUERY, "documents": "one document"}, "documents"),
    ({"model": MODEL, "query": QUERY, "documents": [5]}, "documents"),
    ({"model": MODEL, "query": QUERY, "documents": [{"image": "https://x/y.png"}]}, "documents"),
    ({"model": MODEL, "query": QUERY, "documents": [{"text": "t", "title": "extra"}]}, "documents"),
    ({"model": MODEL, "query": QUERY, "documents": ["d"] * 1001}, "documents"),
    ({"model": MODEL, "query": QUERY, "documents": DOCUMENTS, "top_n": 0}, "top_n"),
    ({"model": MODEL, "query": QUERY, "documents": DOCUMENTS, "top_n": "2"}, "top_n"),
    ({"model": MODEL, "query": QUERY, "documents": DOCUMENTS, "top_n": 1001}, "top_n"),
    ({"model": MODEL, "query": QUERY, "documents": DOCUMENTS, "return_documents": "yes"}, "return_documents"),
]


async def test_bad_input_is_a_400_in_openais_shape(gateway: Any, key: str, fake_jina: FakeJina) -> None:
    for body, param in BAD_INPUT:
        resp = await rerank(gateway, key, body)
        assert resp.status_code == 400, (body, resp.text)
        assert validate_error(resp.json())["error"]["param"] == param, (body, resp.text)
    assert (await rerank(gateway, key, [QUERY])).status_code == 400
    # a body declared over the route's 16 MB is refused before a byte of it is read
    host, port = gateway.base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"POST /v1/rerank HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {17 << 20}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    writer.close()
    assert head.startswith(b"HTTP/1.1 413")
    assert not fake_jina.requests  # refused before any upstream call
    assert await gateway.consume_logs() == []


async def test_an_answer_without_usage_is_billed_on_the_estimate(gateway: Any, key: str,
                                                                 fake_jina: FakeJina) -> None:
    fake_jina.send_usage = False
    resp = await rerank(gateway, key, {"model": MODEL, "query": QUERY, "documents": DOCUMENTS, "top_n": 1})
    assert resp.status_code == 200, resp.text
    estimate = estimator.text(QUERY) + sum(estimator.text(d) for d in DOCUMENTS)
    assert resp.json()["usage"]["total_tokens"] == estimate  # new-api shows what it billed
    (row,) = await gateway.consume_logs()
    assert row.prompt_tokens == estimate and jsonutil.loads(row.other)["usage_source"] == "estimated"
    assert row.quota == max(1, round(estimate * RATIO))


async def test_failover_and_a_malformed_answer(gateway: Any, admin: Any, key: str, fake_jina: FakeJina) -> None:
    await admin.set_option("RetryTimes", 1)
    # the failed channel is asked again at once (no cooldown: tests/faults/test_channel_cooldown.py)
    await admin.set_option("ChannelCooldownBaseSeconds", "0")
    async with FakeJina() as first:
        id_first = await admin.add_channel(base_url=first.base_url, models=MODEL, type=38, name="first",
                                           priority=10)
        first.fail_next(500, "upstream exploded")
        resp = await rerank(gateway, key, {"model": MODEL, "query": QUERY, "documents": DOCUMENTS})
        assert resp.status_code == 200, resp.text
        assert len(first.requests) == 1 and len(fake_jina.requests) == 1
        first.push_fault(Fault("malformed_json"))  # a 200 that is no rerank answer: the next channel answers
        resp = await rerank(gateway, key, {"model": MODEL, "query": QUERY, "documents": DOCUMENTS})
        assert resp.status_code == 200 and len(fake_jina.requests) == 2
        assert not first.violations
    rows = await gateway.consume_logs()
    assert [jsonutil.loads(r.other)["admin_info"]["use_channel"][0] for r in rows] == [id_first, id_first]
    assert all(r.channel_id != id_first for r in rows)


async def test_which_channel_types_serve_rerank(gateway: Any, admin: Any, fake_jina: FakeJina,
                                                fake_anthropic: Any) -> None:
    """Jina and SiliconFlow (40) and the generic OpenAI-compatible types (Custom 8) serve it at
    /v1/rerank; an Anthropic channel and a chat-only vendor (DeepSeek 43) never do."""
    await admin.set_option("ModelRatio", {MODEL: RATIO, "bge-reranker-v2-m3": RATIO, "claude-sonnet-4-5": 1.5,
                                          "deepseek-chat": 0.135})
    await admin.add_channel(base_url=fake_anthropic.base_url, models=f"claude-sonnet-4-5,{MODEL}", type=14,
                            name="anthropic", priority=10)
    await admin.add_channel(base_url=fake_jina.base_url, models=MODEL, type=8, name="custom")
    await admin.add_channel(base_url=fake_jina.base_url, models="bge-reranker-v2-m3", type=40, name="siliconflow")
    await admin.add_channel(base_url=fake_jina.base_url, models="deepseek-chat", type=43, name="deepseek")
    key = await admin.add_token(remain_quota=5_000_000)
    for model in (MODEL, "bge-reranker-v2-m3"):
        resp = await rerank(gateway, key, {"model": model, "query": QUERY, "documents": DOCUMENTS})
        assert resp.status_code == 200, resp.text
    assert not fake_anthropic.requests  # the higher-priority Anthropic channel was skipped
    assert [r["path"] for r in fake_jina.requests] == ["/v1/rerank", "/v1/rerank"]
    for model, channel_type in (("claude-sonnet-4-5", "14"), ("deepseek-chat", "43")):
        resp = await rerank(gateway, key, {"model": model, "query": QUERY, "documents": DOCUMENTS})
        assert resp.status_code == 400, resp.text
        error = validate_error(resp.json())["error"]
        assert error["code"] == "endpoint_not_supported" and "rerank" in error["message"]
        assert channel_type in error["message"]


async def test_the_jina_channel_serves_embeddings_and_nothing_else(gateway: Any, key: str,
                                                                   fake_jina: FakeJina) -> None:
    async with openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                                  _strict_response_validation=True) as sdk:
        result = await sdk.embeddings.create(model="jina-embeddings-v3", input=["hello world", "again"])
        assert result.data[1].embedding == pytest.approx(vector("again", 16))
        # the SDK asked for base64; Jina has no such field (new-api drops it too): floats come back
        assert "encoding_format" not in fake_jina.requests[-1]["json"]
        with pytest.raises(openai.BadRequestError) as refused:
            await sdk.chat.completions.create(model="jina-embeddings-v3", messages=[{"role": "user", "content": "x"}])
        assert refused.value.code == "endpoint_not_supported"
    (row,) = await gateway.consume_logs()
    assert row.model_name == "jina-embeddings-v3" and row.prompt_tokens == 3
