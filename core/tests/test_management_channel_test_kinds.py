"""``GET /api/channel/test/{id}?model=…&endpoint_type=…`` (issue 15): the admin picks the
endpoint kind (new-api's endpoint types), a minimal request of that kind goes through the
channel's provider with the channel's overrides, billed nothing and logged as a test."""

from __future__ import annotations

from faregate import jsonutil
from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI


async def probe(admin: AdminClient, cid: int, **params: str) -> dict[str, object]:
    resp = await admin.http.get(f"/api/channel/test/{cid}", params=params,
                                headers={"New-Api-User": str(admin.user_id)})
    body: dict[str, object] = resp.json()
    body["status"] = resp.status_code
    return body


async def test_each_endpoint_kind_is_tested_on_its_own_path(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeOpenAI() as fake:
        cid = await admin.add_channel(base_url=fake.base_url, models="gpt-4o-mini,text-embedding-3-small",
                                      param_override='{"user": "channel-test"}')
        cases = [("", "gpt-4o-mini", "/v1/chat/completions"), ("openai", "gpt-4o-mini", "/v1/chat/completions"),
                 ("anthropic", "gpt-4o-mini", "/v1/chat/completions"),
                 ("openai-response", "gpt-4o-mini", "/v1/responses"),
                 ("embeddings", "text-embedding-3-small", "/v1/embeddings"),
                 ("image-generation", "gpt-image-1", "/v1/images/generations"),
                 ("moderations", "omni-moderation-latest", "/v1/moderations")]
        for endpoint_type, model, path in cases:
            answer = await probe(admin, cid, model=model, endpoint_type=endpoint_type)
            assert answer["success"] is True, (endpoint_type, answer)
            sent = fake.requests[-1]
            assert sent["path"] == path and sent["json"]["model"] == model
            assert sent["json"]["user"] == "channel-test"  # the channel's override applies to a test too
        rows = await m.Log.filter(channel_id=cid, type=m.LOG_CONSUME).all()
        assert len(rows) == len(cases) and all(r.quota == 0 and r.content == "channel test" for r in rows)
        assert {jsonutil.loads(r.other)["endpoint"] for r in rows} == {"chat", "responses", "embeddings", "images",
                                                                      "moderations"}
        assert (await m.User.get(id=admin.user_id)).used_quota == 0


async def test_kinds_a_channel_does_not_serve_and_unknown_kinds(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeOpenAI() as fake:
        deepseek = await admin.add_channel(base_url=fake.base_url, models="deepseek-chat", type=43)
        answer = await probe(admin, deepseek, endpoint_type="embeddings")
        assert answer["success"] is False and "does not serve the embeddings endpoint" in str(answer["message"])
        assert fake.requests == []
        answer = await probe(admin, deepseek, endpoint_type="teleport")
        assert answer["status"] == 400 and "endpoint_type" in str(answer["message"])
        answer = await probe(admin, deepseek, endpoint_type="x" * 100)
        assert answer["status"] == 400 and "endpoint_type" in str(answer["message"])


async def test_a_malformed_answer_fails_the_test(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeOpenAI() as fake:
        cid = await admin.add_channel(base_url=fake.base_url, models="text-embedding-3-small")
        fake.fail_next(500, "boom")
        answer = await probe(admin, cid, endpoint_type="embeddings")
        assert answer["success"] is False and "500" in str(answer["message"])
        assert await m.Log.filter(channel_id=cid).count() == 0


async def test_without_endpoint_type_the_kind_is_guessed_from_the_model(gateway: GatewayServer,
                                                                         admin: AdminClient) -> None:
    """new-api's guess: an embedding model is tested on embeddings, a reranker on rerank, a
    Codex model on the Responses API, anything else on chat (each where the type serves it)."""
    async with FakeOpenAI() as fake:
        cid = await admin.add_channel(base_url=fake.base_url, models="text-embedding-3-small,gpt-4o-mini")
        for model, path in (("text-embedding-3-small", "/v1/embeddings"), ("gpt-5-codex", "/v1/responses"),
                            ("gpt-4o-mini", "/v1/chat/completions")):
            answer = await probe(admin, cid, model=model)
            assert answer["success"] is True, (model, answer)
            assert fake.requests[-1]["path"] == path, model
        answer = await probe(admin, cid, model="bge-reranker-v2-m3")  # OpenAI (as its fake) has no rerank API
        assert answer["success"] is False and fake.requests[-1]["path"] == "/v1/rerank"
        deepseek = await admin.add_channel(base_url=fake.base_url, models="deepseek-embed", type=43)
        answer = await probe(admin, deepseek)  # no embeddings at DeepSeek: its chat is tested
        assert answer["success"] is True and fake.requests[-1]["path"] == "/v1/chat/completions"
