"""The channel test (``GET /api/channel/test/{id}``) of the OpenAI plugin's channel types
that serve no chat: a Jina channel is tested on embeddings or rerank (the kind new-api
guesses from the model's name, or the one asked for) at Jina's own addresses, against the
fake Jina, which checks each request against Jina's documented shape; and the probes the
OpenAI family builds for each kind (:mod:`faregate_adapter_openai.probes`)."""

from __future__ import annotations

from typing import Any

import pytest

from faregate.api import UpstreamTarget
from faregate.testing.harness import AdminClient
from faregate_adapter_openai.jina import JinaProvider
from faregate_adapter_openai.probes import PROBES
from faregate_adapter_openai.provider import OpenAIProvider
from faregate_adapter_openai.testing.jina import FakeJina

RERANKER, EMBEDDER = "jina-reranker-v2-base-multilingual", "jina-embeddings-v3"


async def test_a_jina_channel_is_tested_on_embeddings_or_rerank(admin: AdminClient, fake_jina: FakeJina) -> None:
    cid = await admin.add_channel(base_url=fake_jina.base_url, models=f"{EMBEDDER},{RERANKER}", type=38)

    async def channel_test(**params: str) -> dict[str, Any]:
        return await admin.call("GET", f"/api/channel/test/{cid}", params=params)

    assert (await channel_test())["success"] is True  # the first model, an embedding model by its name
    assert fake_jina.requests[-1]["path"] == "/v1/embeddings"
    assert fake_jina.requests[-1]["json"] == {"model": EMBEDDER, "input": "hi"}
    assert (await channel_test(model=RERANKER))["success"] is True
    assert fake_jina.requests[-1]["path"] == "/v1/rerank" and fake_jina.requests[-1]["json"]["model"] == RERANKER
    assert (await channel_test(model=RERANKER, endpoint_type="jina-rerank"))["success"] is True
    assert len(fake_jina.requests) == 3
    for refused_kind, why in (("openai", "does not serve the chat endpoint"),
                              ("image-generation", "does not serve the images endpoint")):
        refused = await channel_test(endpoint_type=refused_kind)
        assert refused["success"] is False and why in refused["message"], refused
    assert len(fake_jina.requests) == 3


def _target(channel_type: int) -> UpstreamTarget:
    return UpstreamTarget(base_url="https://up.example", key="sk-k", model="m", stream=False,
                          channel_type=channel_type)


def test_the_probes_follow_what_each_type_serves() -> None:
    openai, jina = OpenAIProvider(), JinaProvider()
    assert {kind for kind in PROBES if openai.probe(kind, _target(1)) is not None} == set(PROBES)
    assert [kind for kind in PROBES if openai.probe(kind, _target(43)) is not None] == ["completions"]  # DeepSeek
    assert sorted(kind for kind in PROBES if jina.probe(kind, _target(38)) is not None) == ["embeddings", "rerank"]
    assert openai.probe("chat", _target(1)) is None  # chat is the core's own test
    probe = openai.probe("completions", _target(43))
    assert probe is not None and probe.request.url == "https://up.example/beta/completions"  # DeepSeek's FIM path


@pytest.mark.parametrize(("kind", "good", "bad"), [
    ("embeddings", b'{"object": "list", "data": []}', b'{"object": "list"}'),
    ("rerank", b'{"results": []}', b'{"data": []}'),
    ("responses", b'{"output": []}', b"[]"),
])
def test_a_probe_tells_an_answer_of_its_kind(kind: str, good: bytes, bad: bytes) -> None:
    probe = OpenAIProvider().probe(kind, _target(1))
    assert probe is not None
    probe.check(good)
    with pytest.raises(ValueError):
        probe.check(bad)
