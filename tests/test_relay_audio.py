"""``POST /v1/audio/transcriptions`` and ``/v1/audio/translations`` through the gateway with
the official ``openai`` SDK (strict response validation) as client: every response format
with the upstream's content type, streamed transcriptions, the form relayed byte for byte
or re-encoded with the channel's model, billing by the minute (per-call price), by the
upstream's tokens (audio at AudioRatio) or by the audio's duration, estimated when the
upstream reports nothing; bad forms are 400s naming the field, an oversized upload a 413
before it is read, and a failing channel hands over to the next with nothing charged. The bad
forms refused by field are in test_relay_audio_refused.py (one gateway for the module)."""

from __future__ import annotations

import asyncio
import io
import math
import wave
from typing import Any
from urllib.parse import urlsplit

import h11
import httpx
import openai
import pytest

from faregate import jsonutil
from faregate.db import models as m
from faregate_adapter_openai.testing.audio import token_usage
from faregate_adapter_openai.testing.schema import validate, validate_error

#: the SDK marks ``audio.translations`` deprecated; the endpoint is still OpenAI's (and new-api's)
pytestmark = pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")
QPU = 500_000
MAPPED = "my-stt"  # a channel alias of whisper-1
TOKEN_PRICED = "whisper-large"  # priced by ModelRatio, served by whisper-1 upstream
JSON_SCHEMAS = {"json": "CreateTranscriptionResponseJson", "verbose_json": "CreateTranscriptionResponseVerboseJson"}


def wav(seconds: float, rate: int = 16_000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(rate)
        audio.writeframes(bytes(2 * round(seconds * rate)))
    return out.getvalue()


@pytest.fixture
async def key(gateway: Any, admin: Any, fake_openai: Any) -> str:
    models = f"whisper-1,gpt-4o-transcribe,gpt-4o-transcribe-diarize,{MAPPED},{TOKEN_PRICED}"
    await admin.add_channel(base_url=fake_openai.base_url, models=models,
                            model_mapping=jsonutil.dumps_str({MAPPED: "whisper-1", TOKEN_PRICED: "whisper-1"}))
    await admin.set_option("ModelRatio", {TOKEN_PRICED: 3})
    # per minute, as whisper-1's built-in price (named again: a stored option is the whole table)
    await admin.set_option("ModelPrice", {MAPPED: 0.006, "whisper-1": 0.006})
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


def per_minute_quota(seconds: float, price: float = 0.006) -> int:
    return round(price * QPU * max(1, math.floor(seconds + 0.5)) / 60)


@pytest.mark.parametrize("fmt", ["json", "text", "srt", "verbose_json", "vtt"])
async def test_each_response_format_comes_back_with_the_upstreams_content_type(
        client: Any, gateway: Any, fake_openai: Any, fmt: str) -> None:
    raw = await client.audio.transcriptions.with_raw_response.create(
        file=("clip.wav", wav(3.0)), model="whisper-1", response_format=fmt, language="en",
        timestamp_granularities=["word", "segment"] if fmt == "verbose_json" else openai.NOT_GIVEN)
    text = "Transcribed 3.00 seconds of clip.wav with whisper-1"
    sent = fake_openai.requests[-1]["json"]
    assert sent["file"] == f"<file clip.wav (audio/x-wav, {len(wav(3.0))} bytes)>" and sent["language"] == "en"
    content_type = raw.http_response.headers["content-type"]
    if fmt in JSON_SCHEMAS:
        assert content_type.startswith("application/json")
        body = validate(JSON_SCHEMAS[fmt], raw.http_response.json())
        assert body["text"] == text and body["usage"] == {"type": "duration", "seconds": 3}
        parsed = raw.parse()
        assert parsed.text == text
        if fmt == "verbose_json":
            assert parsed.duration == 3.0 and [w.word for w in parsed.words] == text.split()
    else:
        assert content_type.startswith("text/plain")
        assert text in raw.http_response.text
        if fmt != "text":
            assert "00:00:03" in raw.http_response.text
    (row,) = await gateway.consume_logs()
    assert (row.model_name, row.quota) == ("whisper-1", per_minute_quota(3))
    # text answers carry no usage: the file's own duration is billed, marked as estimated
    assert other(row)["usage_source"] == ("upstream" if fmt in JSON_SCHEMAS else "estimated")
    assert other(row)["other_ratios"] == {"audio_minutes": 3 / 60}


async def test_the_form_is_relayed_byte_for_byte_unless_the_model_changes(gateway: Any, key: str,
                                                                         fake_openai: Any) -> None:
    files = {"file": ("a.wav", wav(1.0), "audio/wav")}
    data = {"model": "whisper-1", "prompt": "names: Zoë", "temperature": "0.2"}
    request = httpx.Request("POST", gateway.base_url + "/v1/audio/transcriptions", data=data, files=files,
                            headers={"Authorization": f"Bearer {key}"})
    body = request.read()
    async with httpx.AsyncClient() as http:
        assert (await http.send(request)).status_code == 200
        assert fake_openai.requests[-1]["body"] == body  # unchanged
        mapped = await http.post(gateway.base_url + "/v1/audio/transcriptions", files=files,
                                 data={**data, "model": MAPPED}, headers={"Authorization": f"Bearer {key}"})
        assert mapped.status_code == 200, mapped.text
        sent = fake_openai.requests[-1]["json"]
        assert (sent["model"], sent["prompt"], sent["temperature"]) == ("whisper-1", "names: Zoë", 0.2)
        assert sent["file"] == f"<file a.wav (audio/wav, {len(wav(1.0))} bytes)>"
        defaulted = await http.post(gateway.base_url + "/v1/audio/translations", files=files,
                                    headers={"Authorization": f"Bearer {key}"})
        assert defaulted.status_code == 200 and fake_openai.requests[-1]["json"]["model"] == "whisper-1"
    rows = await gateway.consume_logs()
    assert [r.model_name for r in rows] == ["whisper-1", MAPPED, "whisper-1"]
    assert other(rows[1])["upstream_model_name"] == "whisper-1"


async def test_a_transcription_with_the_sync_sdk(gateway: Any, key: str, fake_openai: Any) -> None:
    def transcribe() -> Any:
        with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                           _strict_response_validation=True) as sync:
            return sync.audio.transcriptions.create(file=("clip.wav", wav(2.0)), model="whisper-1")

    result = await asyncio.to_thread(transcribe)
    assert result.text == "Transcribed 2.00 seconds of clip.wav with whisper-1"
    assert fake_openai.requests[-1]["path"] == "/v1/audio/transcriptions"
    (row,) = await gateway.consume_logs()
    assert (row.model_name, row.quota) == ("whisper-1", per_minute_quota(2))


async def test_a_translation_with_the_sync_sdk(gateway: Any, key: str, fake_openai: Any) -> None:
    def translate() -> Any:
        with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                           _strict_response_validation=True) as sync:
            return sync.audio.translations.create(file=("talk.wav", wav(90.4)), model="whisper-1",
                                                  response_format="verbose_json")

    result = await asyncio.to_thread(translate)
    body = validate("CreateTranslationResponseVerboseJson", result.model_dump(exclude_none=True))
    assert body["text"] == "Translated 90.40 seconds of talk.wav with whisper-1" and body["duration"] == 90.4
    assert fake_openai.requests[-1]["path"] == "/v1/audio/translations"
    (row,) = await gateway.consume_logs()
    assert row.quota == per_minute_quota(91)  # the upstream's whole seconds: 91


async def test_tokens_reported_are_billed_with_audio_at_the_audio_ratio(client: Any, gateway: Any,
                                                                        admin: Any) -> None:
    await admin.set_option("ModelRatio", {"gpt-4o-transcribe": 1.25, "gpt-4o-transcribe-diarize": 1.25})
    await admin.set_option("AudioRatio", {"gpt-4o-transcribe": 2.4, "gpt-4o-transcribe-diarize": 3})
    result = await client.audio.transcriptions.create(file=("m.wav", wav(4.2)), model="gpt-4o-transcribe",
                                                      prompt="a short prompt", include=["logprobs"],
                                                      chunking_strategy={"type": "server_vad", "threshold": 0.4})
    usage = result.usage
    assert usage.type == "tokens" and usage.input_token_details.audio_tokens == 42 and result.logprobs
    raw = await client.audio.transcriptions.with_raw_response.create(
        file=("m.wav", wav(2.0)), model="gpt-4o-transcribe-diarize", response_format="diarized_json")
    diarized = validate("CreateTranscriptionResponseDiarizedJson", raw.http_response.json())
    first, second = await gateway.consume_logs()
    text = usage.input_token_details.text_tokens
    assert first.quota == round((text + 42 * 2.4 + usage.output_tokens * 4) * 1.25)
    assert (first.prompt_tokens, other(first)["audio_tokens"], other(first)["audio_ratio"]) == (text + 42, 42, 2.4)
    details = diarized["usage"]["input_token_details"]
    # no CompletionRatio of its own: the gpt-4o family's 4 (new-api's rule; OpenAI's $10 out against $2.50 in)
    assert second.quota == round((details["audio_tokens"] * 3 + diarized["usage"]["output_tokens"] * 4) * 1.25)


async def test_duration_is_billed_as_new_apis_audio_tokens_under_a_token_price(
        client: Any, gateway: Any, fake_openai: Any) -> None:
    await client.audio.transcriptions.create(file=("a.wav", wav(3.0)), model=TOKEN_PRICED)
    fake_openai.audio.usage = False  # nothing reported: the upload's own duration
    await client.audio.transcriptions.create(file=("b.wav", wav(6.0)), model=TOKEN_PRICED)
    reported, measured = await gateway.consume_logs()
    assert (reported.prompt_tokens, reported.quota) == (50, 50 * 3)  # 1,000 audio tokens a minute
    assert other(reported)["usage_source"] == "upstream"
    assert (measured.prompt_tokens, measured.quota) == (100, 100 * 3)
    assert other(measured)["usage_source"] == "estimated"


async def test_an_unreadable_upload_is_billed_on_its_size(client: Any, gateway: Any, fake_openai: Any) -> None:
    fake_openai.audio.usage = False
    await client.audio.transcriptions.create(file=("voice.mp3", b"\x00" * 80_000), model="whisper-1")
    (row,) = await gateway.consume_logs()
    assert row.quota == per_minute_quota(5) and other(row)["usage_source"] == "estimated"  # 80 kB at 16 kB/s


async def test_a_streamed_transcription_is_passed_through_and_billed_on_its_usage(
        client: Any, gateway: Any, admin: Any) -> None:
    await admin.set_option("ModelRatio", {"gpt-4o-transcribe": 1.25})
    stream = await client.audio.transcriptions.create(file=("s.wav", wav(2.5)), model="gpt-4o-transcribe",
                                                      stream=True)
    events = [event async for event in stream]
    for event in events:
        validate("CreateTranscriptionResponseStreamEvent", event.model_dump(exclude_none=True))
    *deltas, done = events
    assert "".join(d.delta for d in deltas) == done.text == "Transcribed 2.50 seconds of s.wav with gpt-4o-transcribe"
    assert done.usage.input_token_details.audio_tokens == 25
    (row,) = await gateway.consume_logs()
    assert row.is_stream and row.quota == round((25 * 2.4 + done.usage.output_tokens * 4) * 1.25)


async def test_a_body_that_is_not_a_form_is_a_400(gateway: Any, key: str, fake_openai: Any) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post("/v1/audio/transcriptions", json={"model": "whisper-1", "file": "x"},
                               headers={"Authorization": f"Bearer {key}"})
    assert resp.status_code == 400 and validate_error(resp.json())["error"]["param"] == "file"
    assert not fake_openai.requests


async def unfinished_request(base_url: str, path: str, headers: dict[str, str], sent: bytes) -> tuple[int, Any]:
    """POST the start of a body whose declared length is never reached: only a server that
    answers without reading the body can reply at all."""
    url = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    conn = h11.Connection(h11.CLIENT)
    try:
        writer.write(conn.send(h11.Request(method="POST", target=path, headers=[("Host", url.netloc),
                                                                                 *headers.items()])))
        writer.write(conn.send(h11.Data(data=sent)))
        await writer.drain()
        status, body = 0, b""
        async with asyncio.timeout(15):
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await reader.read(65536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    body += bytes(event.data)
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    return status, jsonutil.loads(body)
    finally:
        writer.close()


async def test_an_upload_over_25_mb_is_a_413_before_it_is_read(gateway: Any, key: str) -> None:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "multipart/form-data; boundary=b",
               "Content-Length": str(25 * 1024 * 1024 + 1)}
    for path in ("/v1/audio/transcriptions", "/v1/audio/translations"):
        status, body = await unfinished_request(gateway.base_url, path, headers, b"--b\r\n")
        assert status == 413 and validate_error(body)["error"]["code"] == "request_too_large", path


async def test_a_failing_channel_hands_over_and_charges_nothing(gateway: Any, admin: Any, client: Any,
                                                                fake_openai: Any) -> None:
    await admin.set_option("RetryTimes", 1)
    # the failed channel is asked again at once (no cooldown: tests/faults/test_channel_cooldown.py)
    await admin.set_option("ChannelCooldownBaseSeconds", "0")
    async with type(fake_openai)() as second:
        await admin.add_channel(base_url=second.base_url, models="whisper-1", name="second", priority=-1)
        fake_openai.fail_next(500, "the model is overloaded")
        result = await client.audio.transcriptions.create(file=("a.wav", wav(1.0)), model="whisper-1")
        assert result.text.startswith("Transcribed 1.00 seconds") and len(second.requests) == 1
        fake_openai.fail_next(400, "Audio file might be corrupted or unsupported")
        with pytest.raises(openai.BadRequestError) as refused:
            await client.audio.transcriptions.create(file=("a.wav", wav(1.0)), model="whisper-1")
        assert "corrupted" in refused.value.message
    (row,) = await gateway.consume_logs()
    assert row.quota == per_minute_quota(1) and other(row)["admin_info"]["use_channel"] == [1, 2]
    errors = await m.Log.filter(type=m.LOG_ERROR)
    assert [e.quota for e in errors] == [0]


def test_the_fakes_token_usage_is_openais_shape() -> None:
    usage = token_usage({"prompt": "two words"}, 1.0, "three words here")
    assert validate("TranscriptTextUsageTokens", usage)["input_tokens"] == 12


async def test_only_channels_that_serve_audio_are_chosen(gateway: Any, admin: Any, fake_openai: Any,
                                                         fake_anthropic: Any) -> None:
    # higher priority, same model: an Anthropic and a DeepSeek channel (chat only) are never chosen
    await admin.add_channel(base_url=fake_anthropic.base_url, models="whisper-1,stt-x", type=14, name="claude",
                            priority=10)
    await admin.add_channel(base_url=fake_openai.base_url, models="whisper-1,stt-x", type=43, name="deepseek",
                            priority=10)
    await admin.add_channel(base_url=fake_openai.base_url, models="whisper-1", type=40, name="siliconflow")
    await admin.set_option("ModelPrice", {"stt-x": 0.006})
    key = await admin.add_token(remain_quota=5 * QPU)
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
    try:
        assert (await sdk.audio.transcriptions.create(file=("a.wav", wav(1)), model="whisper-1")).text
        assert not fake_anthropic.requests and len(fake_openai.requests) == 1
        with pytest.raises(openai.BadRequestError) as refused:  # SiliconFlow has no translations
            await sdk.audio.translations.create(file=("a.wav", wav(1)), model="whisper-1")
        assert refused.value.code == "endpoint_not_supported" and "audio_translations" in refused.value.message
        with pytest.raises(openai.BadRequestError) as refused:
            await sdk.audio.transcriptions.create(file=("a.wav", wav(1)), model="stt-x")
        assert refused.value.code == "endpoint_not_supported"
    finally:
        await sdk.close()
    assert len(fake_openai.requests) == 1
