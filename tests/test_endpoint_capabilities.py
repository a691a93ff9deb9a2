"""Endpoint capabilities across plugins (issue 12), as the official ``openai`` SDK (strict
response validation) sees them: a channel whose type cannot serve an endpoint is never chosen
for it (a higher-priority DeepSeek channel, which serves chat and completions only, is skipped
for speech and moderations and never called), a model only such channels serve gets a 400
``endpoint_not_supported`` naming the endpoint (before any price is looked for: an unpriced one
too, on every driver), and a model whose only channel is of a type no installed plugin serves gets
a 503 naming the endpoint too."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
import websockets

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.server import DEEPSEEK

SPEECH, MODERATION, DEEPSEEK_ONLY = "tts-1", "omni-moderation-latest", "deepseek-chat"


def sdk(gateway: GatewayServer, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                              _strict_response_validation=True)


async def test_channels_that_cannot_serve_speech_or_moderations_are_skipped(
        gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    await admin.set_option("SelfUseModeEnabled", "true")  # the models' prices are not the point
    deepseek_provider = gateway.gateway.providers[43]
    asked: list[tuple[str, int]] = []  # what the provider was asked its channel types serve

    def serves(endpoint: str, channel_type: int) -> bool:
        asked.append((endpoint, channel_type))
        return type(deepseek_provider).serves(deepseek_provider, endpoint, channel_type)

    monkeypatch.setattr(deepseek_provider, "serves", serves)
    async with FakeOpenAI(vendor=DEEPSEEK) as deepseek:
        await admin.add_channel(base_url=deepseek.base_url, type=43, name="deepseek", priority=10,
                                models=f"{SPEECH},{MODERATION},{DEEPSEEK_ONLY}")
        await admin.add_channel(base_url=fake_openai.base_url, models=f"{SPEECH},{MODERATION}", name="openai")
        async with sdk(gateway, await admin.add_token()) as client:
            speech = await client.audio.speech.create(model=SPEECH, voice="alloy", input="hello there")
            assert speech.content
            # the skipped channel is looked at once per request: the attempts start from the set
            # admission found (the OpenAI channel twice: admission, then its attempt)
            assert asked == [("audio_speech", 43), ("audio_speech", 1), ("audio_speech", 1)]
            moderation = await client.moderations.create(model=MODERATION, input="a kind word")
            assert moderation.results[0].flagged is False
            assert [r["path"] for r in fake_openai.requests] == ["/v1/audio/speech", "/v1/moderations"]
            calls: list[tuple[str, Any]] = [
                ("audio_speech", client.audio.speech.create(model=DEEPSEEK_ONLY, voice="alloy", input="hi")),
                ("moderations", client.moderations.create(model=DEEPSEEK_ONLY, input="hi"))]
            for endpoint, call in calls:
                with pytest.raises(openai.BadRequestError) as refused:
                    await call
                assert refused.value.code == "endpoint_not_supported" and refused.value.param == "model"
                assert f"serves the {endpoint} endpoint" in refused.value.message
        assert not deepseek.requests  # never chosen, not even tried


async def test_a_type_no_installed_plugin_serves_is_a_503_naming_the_endpoint(
        gateway: GatewayServer, admin: AdminClient) -> None:
    channel = await admin.add_channel(base_url="https://api.example.com", models="orphan-model")
    await m.Channel.filter(id=channel).update(type=9999)  # its plugin uninstalled since
    await gateway.gateway.snapshot.load_channel(channel)
    await admin.set_option("SelfUseModeEnabled", "true")
    async with sdk(gateway, await admin.add_token()) as client:
        calls: list[tuple[str, Any]] = [
            ("chat", client.chat.completions.create(model="orphan-model", messages=[{"role": "user", "content": "x"}])),
            ("embeddings", client.embeddings.create(model="orphan-model", input="x")),
            ("audio_speech", client.audio.speech.create(model="orphan-model", voice="alloy", input="x"))]
        for endpoint, call in calls:
            with pytest.raises(openai.InternalServerError) as failed:
                await call
            assert failed.value.status_code == 503 and failed.value.code == "channel:invalid_type"
            assert (f"no channel for model `orphan-model` can serve the {endpoint} endpoint: channel type 9999 has "
                    "no provider plugin installed") in failed.value.message


async def test_capability_is_checked_before_the_price(gateway: GatewayServer, admin: AdminClient) -> None:
    """A model without a price that only channels unable to serve the endpoint have gets the 400
    ``endpoint_not_supported`` naming the endpoint, not the price error (checked from the routing
    snapshot before any price is looked for): on every driver, the core's chat and each plugin's."""
    unpriced, image_only = "unpriced-deepseek-model", "unpriced-replicate-model"
    nowhere = "http://127.0.0.1:9"  # never called
    await admin.add_channel(base_url=nowhere, type=43, name="deepseek", models=f"{unpriced},{unpriced}-openai-compact")
    await admin.add_channel(base_url=nowhere, type=56, name="replicate", models=image_only)
    key = await admin.add_token()
    calls: list[tuple[str, str, dict[str, Any]]] = [  # (endpoint, path, body)
        ("embeddings", "/v1/embeddings", {"model": unpriced, "input": "x"}),
        ("moderations", "/v1/moderations", {"model": unpriced, "input": "x"}),
        ("audio_speech", "/v1/audio/speech", {"model": unpriced, "voice": "alloy", "input": "x"}),
        ("images", "/v1/images/generations", {"model": unpriced, "prompt": "a cat"}),
        ("rerank", "/v1/rerank", {"model": unpriced, "query": "q", "documents": ["a", "b"]}),
        ("responses_compact", "/v1/responses/compact", {"model": unpriced, "input": "x"}),
        ("chat", "/v1/chat/completions", {"model": image_only, "messages": [{"role": "user", "content": "x"}]}),
        ("completions", "/v1/completions", {"model": image_only, "prompt": "x"}),
        ("responses", "/v1/responses", {"model": image_only, "input": "x"}),
        ("gemini_embeddings", f"/v1beta/models/{unpriced}:embedContent", {"content": {"parts": [{"text": "x"}]}}),
    ]
    async with httpx.AsyncClient(base_url=gateway.base_url, headers={"Authorization": f"Bearer {key}"}) as http:
        for endpoint, path, body in calls:
            answer = await http.post(path, json=body)
            assert answer.status_code == 400 and f"serves the {endpoint} endpoint" in answer.text, answer.text
    url = gateway.base_url.replace("http://", "ws://") + f"/v1/realtime?model={unpriced}"
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}):
            pass
    assert refused.value.response.status_code == 400
    assert b"serves the realtime endpoint" in refused.value.response.body
