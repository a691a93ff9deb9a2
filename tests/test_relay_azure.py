"""Azure OpenAI channels (type 3) through the gateway: the official ``openai`` SDK calls the
gateway as it calls OpenAI, the gateway calls the fake Azure resource (FakeAzure: OpenAI's
schemas at Azure's deployment URLs, ``api-key`` and ``api-version`` required) for every
endpoint kind Azure serves: chat (regular and streamed, billed on the usage chunk), legacy
completions, embeddings, image generation, a transcription upload, speech, the Responses API
(Azure's ``/openai/v1/responses``) and realtime sessions (the SDK's GA protocol at
``/openai/v1/realtime?model=``, a beta client's at the preview path ``/openai/realtime?deployment=``,
each of which the fake refuses in the other protocol);
the deployment is the channel's upstream model name, the api-version the channel's ``other``
(else new-api's default), and the caller's key never reaches Azure."""

from __future__ import annotations

import asyncio
import io
import json
import wave
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
import websockets

from faregate import jsonutil
from faregate.db import models as m
from faregate.testing.harness import AdminClient
from faregate_adapter_openai.testing import REPLY_PREFIX
from faregate_adapter_openai.testing.azure import FakeAzure
from faregate_adapter_openai.testing.realtime import REPLY_TEXT

AZ_KEY = "0123456789abcdef0123456789abcdef"
MODELS = ("gpt-4o,gpt-4o-mini,gpt-3.5-turbo-instruct,text-embedding-3-small,dall-e-3,whisper-1,tts-1,gpt-realtime")
DEFAULT_VERSION = "2025-04-01-preview"


@pytest.fixture
async def azure(fake_azure: FakeAzure) -> FakeAzure:
    fake_azure.key = AZ_KEY
    return fake_azure


@pytest.fixture
async def client(gateway: Any, admin: AdminClient, azure: FakeAzure) -> AsyncIterator[openai.AsyncOpenAI]:
    await admin.set_option("ModelRatio", {"gpt-4o": 1.25, "gpt-4o-mini": 0.075, "gpt-3.5-turbo-instruct": 0.75,
                                          "text-embedding-3-small": 0.01, "gpt-realtime": 2, "tts-1": 7.5})
    await admin.add_channel(base_url=azure.base_url, models=MODELS, key=AZ_KEY, type=3, name="azure",
                            model_mapping='{"gpt-4o-mini": "mini-eu"}')
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(remain_quota=10**8),
                             max_retries=0)
    yield sdk
    await sdk.close()


def called(fake: FakeAzure) -> tuple[str, str]:
    """The path and api-version of the fake's last request, after checking its credentials."""
    last = fake.requests[-1]
    assert last["headers"]["api-key"] == AZ_KEY and "authorization" not in last["headers"]
    return last["path"], last["query"].get("api-version", "")


async def rows(gateway: Any) -> list[m.Log]:
    await gateway.gateway.ledger.flush()
    return list(await m.Log.filter(type=m.LOG_CONSUME).order_by("id"))


def wav(seconds: float) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(16_000)
        audio.writeframes(b"\x00\x00" * int(16_000 * seconds))
    return out.getvalue()


async def test_chat_goes_to_the_deployment_with_the_api_key(client: openai.AsyncOpenAI, gateway: Any,
                                                            azure: FakeAzure) -> None:
    reply = await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi azure"}])
    assert reply.choices[0].message.content == REPLY_PREFIX + "hi azure"
    assert called(azure) == ("/openai/deployments/gpt-4o/chat/completions", DEFAULT_VERSION)
    stream = await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "s"}],
                                                  stream=True)
    assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == REPLY_PREFIX + "s"
    assert called(azure) == ("/openai/deployments/mini-eu/chat/completions", DEFAULT_VERSION)  # the mapping
    assert azure.requests[-1]["json"]["stream_options"] == {"include_usage": True}
    regular, streamed = await rows(gateway)
    assert regular.completion_tokens == reply.usage.completion_tokens  # type: ignore[union-attr]
    assert jsonutil.loads(streamed.other)["usage_source"] == "upstream" and streamed.is_stream


async def test_the_api_version_comes_from_other(gateway: Any, admin: AdminClient, azure: FakeAzure) -> None:
    await admin.add_channel(base_url=azure.base_url, models="gpt-4o", key=AZ_KEY, type=3, other="2024-10-21")
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0)
    await sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "v"}])
    await sdk.close()
    assert called(azure) == ("/openai/deployments/gpt-4o/chat/completions", "2024-10-21")


async def test_every_other_endpoint_kind(client: openai.AsyncOpenAI, gateway: Any, azure: FakeAzure) -> None:
    completion = await client.completions.create(model="gpt-3.5-turbo-instruct", prompt="Say", max_tokens=8)
    assert completion.choices[0].text
    assert called(azure) == ("/openai/deployments/gpt-3.5-turbo-instruct/completions", DEFAULT_VERSION)
    embedded = await client.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
    assert len(embedded.data) == 2
    assert called(azure) == ("/openai/deployments/text-embedding-3-small/embeddings", DEFAULT_VERSION)
    image = await client.images.generate(model="dall-e-3", prompt="a harbour", response_format="b64_json")
    assert image.data and image.data[0].b64_json
    assert called(azure) == ("/openai/deployments/dall-e-3/images/generations", DEFAULT_VERSION)
    text = await client.audio.transcriptions.create(file=("c.wav", wav(2.0)), model="whisper-1")
    assert "2.00 seconds of c.wav" in text.text
    assert called(azure) == ("/openai/deployments/whisper-1/audio/transcriptions", DEFAULT_VERSION)
    speech = await client.audio.speech.create(model="tts-1", voice="alloy", input="Hello from Azure")
    assert speech.content
    assert called(azure) == ("/openai/deployments/tts-1/audio/speech", DEFAULT_VERSION)
    response = await client.responses.create(model="gpt-4o", input="respond")
    assert response.output_text
    assert called(azure) == ("/openai/v1/responses", "preview")
    assert azure.requests[-1]["json"]["model"] == "gpt-4o"  # the deployment, in the body
    assert len(await rows(gateway)) == 6
    with pytest.raises(openai.BadRequestError) as unserved:  # Azure has no moderations endpoint
        await client.moderations.create(model="gpt-4o", input="x")
    assert unserved.value.code == "endpoint_not_supported"


async def test_a_realtime_session_through_an_azure_channel(client: openai.AsyncOpenAI, gateway: Any,
                                                           azure: FakeAzure) -> None:
    async with client.realtime.connect(model="gpt-realtime") as conn:
        await conn.session.update(session={"type": "realtime", "output_modalities": ["text"]})
        await conn.conversation.item.create(item={"type": "message", "role": "user",
                                                  "content": [{"type": "input_text", "text": "hello"}]})
        await conn.response.create()
        said = ""
        async with asyncio.timeout(10):
            async for event in conn:
                if event.type == "response.output_text.delta":
                    said += event.delta
                if event.type == "response.done":
                    break
    assert said == REPLY_TEXT
    # the GA protocol the SDK speaks is Azure's v1 path's (the preview path would refuse its session)
    (session,) = azure.realtime.sessions
    assert (session.path, session.query) == ("/openai/v1/realtime", {"model": "gpt-realtime"})
    assert session.headers["api-key"] == AZ_KEY and "authorization" not in session.headers
    assert "openai-beta" not in session.headers
    await asyncio.wait_for(session.closed.wait(), 5)
    async with asyncio.timeout(10):
        while not (billed := await rows(gateway)):
            await asyncio.sleep(0.05)
    assert billed[0].model_name == "gpt-realtime" and billed[0].quota > 0


async def test_a_beta_realtime_client_gets_azure_s_preview_path(client: openai.AsyncOpenAI, gateway: Any,
                                                                azure: FakeAzure) -> None:
    """A client of the beta protocol (``OpenAI-Beta: realtime=v1``) is dialed to the preview
    path with the channel's api-version, and its beta events are relayed and billed."""
    url = gateway.base_url.replace("http://", "ws://") + "/v1/realtime?model=gpt-realtime"
    headers = {"Authorization": f"Bearer {client.api_key}", "OpenAI-Beta": "realtime=v1"}
    async with websockets.connect(url, additional_headers=headers) as ws:
        for event in ({"type": "session.update", "session": {"modalities": ["text"]}},
                      {"type": "conversation.item.create", "item": {
                          "type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}},
                      {"type": "response.create"}):
            await ws.send(json.dumps(event))
        seen: list[dict[str, Any]] = []
        async with asyncio.timeout(10):
            while not seen or seen[-1]["type"] != "response.done":
                seen.append(json.loads(await ws.recv()))
    kinds = {event["type"] for event in seen}
    assert "error" not in kinds and "conversation.item.created" in kinds
    assert "".join(e["delta"] for e in seen if e["type"] == "response.text.delta") == REPLY_TEXT
    assert seen[0]["session"]["modalities"] == ["text", "audio"]  # the beta session's shape
    (session,) = azure.realtime.sessions
    assert (session.path, session.query) == ("/openai/realtime", {"api-version": DEFAULT_VERSION,
                                                                  "deployment": "gpt-realtime"})
    assert session.headers["api-key"] == AZ_KEY and session.headers["openai-beta"] == "realtime=v1"
    async with asyncio.timeout(10):
        while not (billed := await rows(gateway)):
            await asyncio.sleep(0.05)
    usage = seen[-1]["response"]["usage"]
    assert (billed[0].prompt_tokens, billed[0].completion_tokens) == (usage["input_tokens"], usage["output_tokens"])
    assert jsonutil.loads(billed[0].other)["usage_source"] == "upstream"


async def test_azure_s_refusal_of_a_wrong_key_is_relayed_without_it(gateway: Any, admin: AdminClient,
                                                                    azure: FakeAzure) -> None:
    await admin.add_channel(base_url=azure.base_url, models="gpt-4o", key="wrong-" + AZ_KEY, type=3, auto_ban=0)
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0)
    with pytest.raises(openai.AuthenticationError) as refused:
        await sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    await sdk.close()
    assert AZ_KEY not in str(refused.value.body)


async def test_an_api_version_that_is_not_one_is_refused_when_saved(admin: AdminClient, azure: FakeAzure) -> None:
    refused = await admin.call("POST", "/api/channel/", json={"mode": "single", "channel": {
        "type": 3, "key": AZ_KEY, "name": "az", "base_url": azure.base_url, "models": "gpt-4o", "group": "default",
        "other": "2024-10-21&api-key=x"}})
    assert refused["success"] is False and "api-version" in refused["message"]
    assert await m.Channel.all().count() == 0
