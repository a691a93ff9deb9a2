"""Rerank (``POST /v1/rerank``, the OpenAI plugin's route in new-api's shape) on a Cohere
channel, with raw httpx (no official SDK has a rerank method for this shape): the request
as Cohere v2 takes it (checked by the fake against Cohere's published schema), the answer
normalised as new-api's with the documents sent, billing on the estimate (Cohere bills
search units), and what a malformed answer or an upstream error does."""

from __future__ import annotations

import json
from typing import Any

from faregate.api import estimator
from faregate.testing.fake_server import Fault
from faregate_adapter_cohere.testing import RERANK_MODEL

Deployment = Any  # conftest's Deployment: a gateway, the fake Cohere, a key
QUERY = "organic skincare for sensitive skin"
DOCUMENTS = ["New makeup trends focus on bold colors", "Organic skincare for sensitive skin with aloe vera",
             "Skincare tips for dry skin", "A guide to sensitive topics"]


def estimate() -> int:
    return estimator.text(QUERY) + sum(estimator.text(d) for d in DOCUMENTS)


async def test_rerank_goes_to_v2_and_is_normalised_with_documents(deployment: Deployment) -> None:
    resp = await deployment.post("/v1/rerank", {"model": RERANK_MODEL, "query": QUERY, "documents": DOCUMENTS,
                                                "top_n": 3})
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert [r["index"] for r in answer["results"]] == [1, 2, 3]
    assert [r["document"] for r in answer["results"]] == [{"text": DOCUMENTS[i]} for i in (1, 2, 3)]
    scores = [r["relevance_score"] for r in answer["results"]]
    assert scores == sorted(scores, reverse=True) and all(isinstance(s, float) for s in scores)
    sent = deployment.fake.requests[-1]
    assert sent["path"] == "/v2/rerank" and sent["headers"]["authorization"] == "Bearer co-upstream-key"
    assert sent["json"] == {"model": RERANK_MODEL, "query": QUERY, "documents": DOCUMENTS, "top_n": 3}
    tokens = estimate()  # Cohere reports search units, no tokens: new-api bills (and shows) its estimate
    assert answer["usage"] == {"prompt_tokens": tokens, "completion_tokens": 0, "total_tokens": tokens}
    (row,) = await deployment.consume_logs()
    assert (row.model_name, row.prompt_tokens, row.completion_tokens) == (RERANK_MODEL, tokens, 0)
    assert row.quota == max(1, round(tokens * deployment.ratios[RERANK_MODEL][0]))
    assert json.loads(row.other)["usage_source"] == "estimated"


async def test_object_documents_go_up_as_text_and_return_documents_false(deployment: Deployment) -> None:
    resp = await deployment.post("/v1/rerank", {"model": RERANK_MODEL, "query": "bold makeup",
                                                "documents": [{"text": d} for d in DOCUMENTS],
                                                "return_documents": False})
    assert resp.status_code == 200, resp.text
    results = resp.json()["results"]
    assert len(results) == len(DOCUMENTS) and results[0]["index"] == 0
    assert all("document" not in r for r in results)
    # v2 takes strings and has no return_documents (the fake refuses what Cohere's schema refuses)
    assert deployment.fake.requests[-1]["json"] == {"model": RERANK_MODEL, "query": "bold makeup",
                                                    "documents": DOCUMENTS}


async def test_a_malformed_answer_is_a_502_and_costs_nothing(deployment: Deployment) -> None:
    deployment.fake.push_fault(Fault("malformed_json"))
    resp = await deployment.post("/v1/rerank", {"model": RERANK_MODEL, "query": QUERY, "documents": DOCUMENTS})
    assert resp.status_code == 502 and resp.json()["error"]["code"] == "bad_response_body"
    assert await deployment.consume_logs() == []


async def test_cohere_errors_reach_the_client(deployment: Deployment) -> None:
    deployment.fake.fail_next(422, "too many documents for this model")
    resp = await deployment.post("/v1/rerank", {"model": RERANK_MODEL, "query": QUERY, "documents": DOCUMENTS})
    assert resp.status_code == 422
    assert resp.json()["error"]["message"].startswith("too many documents for this model")
    assert await deployment.consume_logs() == []
