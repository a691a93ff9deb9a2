"""A Cohere channel's own management routes against the fake Cohere: its test (``GET
/api/channel/test/{id}``: chat as ``/v2/chat``, rerank as ``/v2/rerank``, chosen by the model's
name as new-api guesses or by ``endpoint_type``) and its upstream model list (``GET
/api/channel/fetch_models/{id}``: Cohere's ``{"models": [{"name"}]}``)."""

from __future__ import annotations

from typing import Any

import pytest

from faregate.api import GatewayError
from faregate_adapter_cohere.provider import CohereProvider
from faregate_adapter_cohere.testing import CHAT_MODEL, DEFAULT_MODELS, RERANK_MODEL

Deployment = Any  # conftest's Deployment: a gateway, the fake Cohere, a Cohere channel


async def channel_test(deployment: Deployment, **params: str) -> dict[str, Any]:
    answer: dict[str, Any] = await deployment.admin.call("GET", f"/api/channel/test/{deployment.channel}",
                                                         params=params)
    return answer


async def test_the_channel_test_calls_chat_or_rerank_as_cohere_takes_them(deployment: Deployment) -> None:
    fake = deployment.fake
    assert (await channel_test(deployment))["success"] is True  # the channel's first model: chat
    assert fake.requests[-1]["path"] == "/v2/chat" and fake.requests[-1]["json"]["model"] == CHAT_MODEL
    assert (await channel_test(deployment, model=RERANK_MODEL))["success"] is True  # a reranker, by its name
    sent = fake.requests[-1]
    assert sent["path"] == "/v2/rerank" and sent["json"] == {"model": RERANK_MODEL, "query": "hi",
                                                              "documents": ["hi", "bye"], "top_n": 1}
    assert (await channel_test(deployment, model=RERANK_MODEL, endpoint_type="jina-rerank"))["success"] is True
    refused = await channel_test(deployment, endpoint_type="embeddings")
    assert refused["success"] is False and "does not serve the embeddings endpoint" in refused["message"]
    assert len(fake.requests) == 3
    fake.fail_next(429, "trial key rate limit")
    failed = await channel_test(deployment, model=RERANK_MODEL)
    assert failed["success"] is False and "429" in failed["message"]


async def test_fetch_models_reads_cohere_s_model_list(deployment: Deployment) -> None:
    models = await deployment.admin.ok("GET", f"/api/channel/fetch_models/{deployment.channel}")
    assert models == list(DEFAULT_MODELS)
    sent = deployment.fake.requests[-1]
    assert sent["path"] == "/v1/models" and sent["query"] == {"page_size": "1000"}


def test_parse_models_takes_names_and_refuses_other_shapes() -> None:
    provider = CohereProvider()
    body = b'{"models": [{"name": "command-a-03-2025", "endpoints": ["chat"]}, {"name": 7}, "x", {"id": "y"}]}'
    assert provider.parse_models(body) == ["command-a-03-2025"]
    assert provider.parse_models(b'{"models": [], "next_page_token": null}') == []
    for bad in (b"{", b"[]", b'{"models": {}}', b'{"data": []}'):
        with pytest.raises(GatewayError) as refused:
            provider.parse_models(bad)
        assert refused.value.code == "bad_response_body"
