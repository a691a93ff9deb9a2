"""Endpoint capabilities across plugins (issue 12), as the official ``openai`` SDK (strict
response validation) sees them: a channel whose type cannot serve an endpoint is never chosen
for it (a higher-priority DeepSeek channel, which serves chat and completions only, is skipped
for speech and moderations and never called), a model only such channels serve gets a 400
``endpoint_not_supported`` naming the endpoint, and a model whose only channel is of a type
no installed plugin serves gets a 503 naming the endpoint too."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.server import DEEPSEEK

SPEECH, MODERATION, DEEPSEEK_ONLY = "tts-1", "omni-moderation-latest", "deepseek-chat"


def sdk(gateway: GatewayServer, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                              _strict_response_validation=True)


async def test_channels_that_cannot_serve_speech_or_moderations_are_skipped(
        gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    await admin.set_option("SelfUseModeEnabled", "true")  # the models' prices are not the point
    async with FakeOpenAI(vendor=DEEPSEEK) as deepseek:
        await admin.add_channel(base_url=deepseek.base_url, type=43, name="deepseek", priority=10,
                                models=f"{SPEECH},{MODERATION},{DEEPSEEK_ONLY}")
        await admin.add_channel(base_url=fake_openai.base_url, models=f"{SPEECH},{MODERATION}", name="openai")
        async with sdk(gateway, await admin.add_token()) as client:
            speech = await client.audio.speech.create(model=SPEECH, voice="alloy", input="hello there")
            assert speech.content
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
