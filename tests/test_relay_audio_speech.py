"""``POST /v1/audio/speech`` through the gateway with the official ``openai`` SDK (strict
response validation) as client: the audio is streamed to the client as the upstream sends
it (the first bytes arrive while the upstream still holds the rest), in every format with
the upstream's content type; ``stream_format: sse`` events are passed through; the body
goes upstream unchanged unless the channel maps the model. Billed per input character
(estimated: the audio carries no usage) or on a stream's reported tokens; a bad body is a
400 naming the field, a large one a 413; an upstream that breaks mid-audio aborts the
client's connection and charges nothing. The bad bodies refused by field are in
test_relay_audio_speech_refused.py (one gateway for the module)."""

from __future__ import annotations

import asyncio
import base64
import io
import wave
from typing import Any

import httpx
import openai
import pytest

from faregate import jsonutil
from faregate.db import models as m
from faregate_adapter_openai.testing import Fault
from faregate_adapter_openai.testing.audio import SPEECH_SECONDS_PER_CHAR, speech_audio
from faregate_adapter_openai.testing.schema import validate, validate_error

QPU = 500_000
TYPES = {"mp3": "audio/mpeg", "opus": "audio/opus", "aac": "audio/aac", "flac": "audio/flac", "wav": "audio/wav",
         "pcm": "audio/pcm"}
TEXT = "The quick brown fox jumps over the lazy dog."


@pytest.fixture
async def key(gateway: Any, admin: Any, fake_openai: Any) -> str:
    await admin.add_channel(base_url=fake_openai.base_url, models="tts-1,tts-1-hd,gpt-4o-mini-tts,my-tts",
                            model_mapping='{"my-tts": "tts-1"}')
    # the whole table: the built-in prices of the models used here, named again
    await admin.set_option("ModelRatio", {"my-tts": 7.5, "tts-1": 7.5, "tts-1-hd": 15, "gpt-4o-mini-tts": 0.3})
    token: str = await admin.add_token(remain_quota=50 * QPU)
    return token


@pytest.fixture
async def client(gateway: Any, key: str) -> Any:
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                             _strict_response_validation=True)
    yield sdk
    await sdk.close()



def other(row: m.Log) -> dict[str, Any]:
    value: dict[str, Any] = jsonutil.loads(row.other)
    return value


def expected_audio(fmt: str, text: str = TEXT) -> bytes:
    return speech_audio(fmt, len(text) * SPEECH_SECONDS_PER_CHAR)


async def test_the_audio_reaches_the_client_before_the_upstream_has_finished(client: Any, gateway: Any,
                                                                             fake_openai: Any) -> None:
    gate = fake_openai.audio.gate = asyncio.Event()  # the fake holds the rest until the test has a chunk
    async with client.audio.speech.with_streaming_response.create(model="tts-1", voice="alloy", input=TEXT,
                                                                  response_format="wav") as response:
        assert response.headers["content-type"] == "audio/wav"
        chunks = response.iter_bytes()
        first = await asyncio.wait_for(anext(chunks), 10)
        assert first and not gate.is_set()
        gate.set()
        audio = first + b"".join([chunk async for chunk in chunks])
    assert audio == expected_audio("wav")
    with wave.open(io.BytesIO(audio)) as parsed:
        assert parsed.getnframes() / parsed.getframerate() == pytest.approx(len(TEXT) * SPEECH_SECONDS_PER_CHAR)
    (row,) = await gateway.consume_logs()
    assert (row.model_name, row.prompt_tokens, row.quota) == ("tts-1", len(TEXT), round(len(TEXT) * 7.5))
    assert other(row)["usage_source"] == "estimated" and other(row)["end_reason"] == "done"


@pytest.mark.parametrize("fmt", sorted(TYPES))
async def test_each_format_comes_back_with_the_upstreams_content_type(client: Any, fake_openai: Any,
                                                                      fmt: str) -> None:
    result = await client.audio.speech.create(model="tts-1-hd", voice="nova", input=TEXT, response_format=fmt,
                                              speed=1.5, instructions="")
    assert result.response.headers["content-type"] == TYPES[fmt]
    assert result.content == expected_audio(fmt)
    assert fake_openai.requests[-1]["json"]["speed"] == 1.5


async def test_the_sync_sdk_streams_speech_to_a_file(gateway: Any, key: str, tmp_path: Any) -> None:
    def speak() -> bytes:
        with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                           _strict_response_validation=True) as sync, \
                sync.audio.speech.with_streaming_response.create(model="tts-1", voice={"id": "voice_1234"},
                                                                 input=TEXT) as response:
            response.stream_to_file(tmp_path / "speech.mp3")
        return (tmp_path / "speech.mp3").read_bytes()

    assert await asyncio.to_thread(speak) == expected_audio("mp3")


async def test_the_body_goes_up_unchanged_unless_the_model_changes(gateway: Any, key: str,
                                                                  fake_openai: Any) -> None:
    body = b'{"model": "tts-1", "voice": "alloy", "input": "  spaced  out  ", "response_format": "pcm"}'
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        same = await http.post("/v1/audio/speech", content=body, headers=headers)
        assert same.status_code == 200 and fake_openai.requests[-1]["body"] == body
        mapped = await http.post("/v1/audio/speech", json={"model": "my-tts", "voice": "alloy", "input": "hi"},
                                 headers=headers)
        assert mapped.status_code == 200 and fake_openai.requests[-1]["json"]["model"] == "tts-1"
        defaulted = await http.post("/v1/audio/speech", json={"voice": "alloy", "input": "hi"}, headers=headers)
        assert defaulted.status_code == 200 and fake_openai.requests[-1]["json"]["model"] == "tts-1"
        assert defaulted.headers["content-type"] == "audio/mpeg"
    rows = await gateway.consume_logs()
    assert [(r.model_name, r.prompt_tokens) for r in rows] == [("tts-1", 15), ("my-tts", 2), ("tts-1", 2)]
    assert other(rows[1])["upstream_model_name"] == "tts-1"


async def test_sse_speech_is_passed_through_and_billed_on_its_usage(client: Any, gateway: Any) -> None:
    result = await client.audio.speech.create(model="gpt-4o-mini-tts", voice="coral", input=TEXT,
                                              instructions="Cheerful.", stream_format="sse", response_format="wav")
    assert result.response.headers["content-type"].startswith("text/event-stream")
    events = [validate("CreateSpeechResponseStreamEvent", jsonutil.loads(line[len(b"data: "):]))
              for line in result.content.split(b"\n") if line.startswith(b"data: ")]
    *deltas, done = events
    assert b"".join(base64.b64decode(d["audio"]) for d in deltas) == expected_audio("wav")
    usage = done["usage"]
    (row,) = await gateway.consume_logs()
    # the built-in prices: $0.60 / 1M text in (ratio 0.3), $12 / 1M audio out (completion ratio 20)
    assert row.is_stream and row.quota == round((usage["input_tokens"] + usage["output_tokens"] * 20) * 0.3)
    assert other(row)["usage_source"] == "upstream"


async def test_an_upstream_refusal_is_relayed_and_nothing_is_charged(client: Any, gateway: Any) -> None:
    with pytest.raises(openai.BadRequestError) as refused:  # OpenAI: tts-1 has no sse
        await client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT, stream_format="sse")
    assert "stream_format sse is not supported" in refused.value.message
    assert await gateway.consume_logs() == []
    assert [e.quota for e in await m.Log.filter(type=m.LOG_ERROR)] == [0]


async def test_a_large_or_unreadable_body_is_refused(gateway: Any, key: str, fake_openai: Any) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        large = await http.post("/v1/audio/speech", json={"input": "x" * 300_000, "voice": "alloy"},
                                headers={"Authorization": f"Bearer {key}"})
        broken = await http.post("/v1/audio/speech", content=b"{not json", headers={"Authorization": f"Bearer {key}"})
    assert large.status_code == 413 and validate_error(large.json())["error"]["code"] == "request_too_large"
    assert broken.status_code == 400 and validate_error(broken.json())["error"]["code"] == "bad_request_body"
    assert not fake_openai.requests


async def test_a_failing_channel_hands_over_before_any_audio(gateway: Any, admin: Any, client: Any,
                                                             fake_openai: Any) -> None:
    await admin.set_option("RetryTimes", 1)
    async with type(fake_openai)() as second:
        await admin.add_channel(base_url=second.base_url, models="tts-1", name="second", priority=-1)
        fake_openai.push_fault(Fault("reset"))
        result = await client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT)
        assert result.content == expected_audio("mp3") and len(second.requests) == 1
    (row,) = await gateway.consume_logs()
    assert other(row)["admin_info"]["use_channel"] == [1, 2]


async def test_audio_cut_mid_way_aborts_the_client_and_charges_nothing(client: Any, gateway: Any,
                                                                       fake_openai: Any) -> None:
    fake_openai.push_fault(Fault("stream_cut", after_chunks=1))
    received = b""
    # not a clean end (the SDK's transport raises): the client knows the audio is short
    with pytest.raises(Exception, match="incomplete chunked read"):
        async with client.audio.speech.with_streaming_response.create(model="tts-1", voice="alloy",
                                                                      input=TEXT) as response:
            async for chunk in response.iter_bytes():
                received += chunk
    assert 0 < len(received) < len(expected_audio("mp3"))
    await gateway.gateway.ledger.flush()
    assert await gateway.consume_logs() == []
    (error,) = await m.Log.filter(type=m.LOG_ERROR)
    assert error.quota == 0 and "stream_broken" in error.other


async def test_a_client_that_leaves_mid_audio_is_charged(client: Any, gateway: Any, fake_openai: Any) -> None:
    gate = fake_openai.audio.gate = asyncio.Event()
    async with client.audio.speech.with_streaming_response.create(model="tts-1", voice="alloy",
                                                                  input=TEXT) as response:
        assert await asyncio.wait_for(anext(response.iter_bytes()), 10)
    try:  # the upstream still holds the rest: the gateway notices the client's leaving on its own time
        async with asyncio.timeout(10):
            while not (rows := await gateway.consume_logs()):
                await asyncio.sleep(0.02)
    finally:
        gate.set()
    assert rows[0].quota == round(len(TEXT) * 7.5) and other(rows[0])["end_reason"] == "client_gone"
