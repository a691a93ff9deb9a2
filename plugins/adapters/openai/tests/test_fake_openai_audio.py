"""The fake OpenAI's audio endpoints, called with the official SDK and raw forms: they
refuse what OpenAI's published schema refuses (forms typed as OpenAI reads them), answer
its documented shapes, and make real audio files where the standard library can."""

from __future__ import annotations

import io
import wave
from collections.abc import Callable
from typing import Any

import httpx
import mutagen
import pytest

from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.audio import speech_audio
from faregate_adapter_openai.testing.schema import validate, validate_error


def wav(seconds: float) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(8000)
        audio.writeframes(bytes(2 * round(seconds * 8000)))
    return out.getvalue()


async def test_a_valid_form_is_typed_as_openai_reads_it(fake: FakeOpenAI, sdk: Callable[..., Any]) -> None:
    client = sdk(fake, _strict_response_validation=True)
    result = await client.audio.transcriptions.create(
        file=("a.wav", wav(2.0)), model="whisper-1", temperature=0.3, response_format="verbose_json",
        timestamp_granularities=["word"])
    assert result.duration == 2.0 and result.usage.seconds == 2
    sent = fake.requests[-1]["json"]
    assert (sent["temperature"], sent["timestamp_granularities"]) == (0.3, ["word"])
    assert not fake.violations


@pytest.mark.parametrize(("path", "data", "error"), [
    ("/v1/audio/transcriptions", {"temperature": "0"}, "'model' is a required property"),
    ("/v1/audio/transcriptions", {"model": "whisper-1", "temperature": "hot"}, "temperature"),
    ("/v1/audio/transcriptions", {"model": "whisper-1", "response_format": "xml"}, "response_format"),
    ("/v1/audio/translations", {"model": "whisper-1", "language": "en"}, "language"),
    ("/v1/audio/transcriptions", {"model": "whisper-1", "chunking_strategy[type]": "vad"}, "chunking_strategy"),
])
async def test_a_form_openai_refuses_is_refused_and_recorded(fake: FakeOpenAI, path: str, data: dict[str, str],
                                                             error: str) -> None:
    async with httpx.AsyncClient(base_url=fake.base_url) as http:
        resp = await http.post(path, data=data, files={"file": ("a.wav", wav(0.5))},
                               headers={"Authorization": f"Bearer {fake.key}"})
    assert resp.status_code == 400 and error in validate_error(resp.json())["error"]["message"]
    assert len(fake.violations) == 1


async def test_a_speech_body_openai_refuses_is_refused(fake: FakeOpenAI) -> None:
    async with httpx.AsyncClient(base_url=fake.base_url) as http:
        resp = await http.post("/v1/audio/speech", json={"model": "tts-1", "voice": "alloy", "input": "x" * 4097},
                               headers={"Authorization": f"Bearer {fake.key}"})
    assert resp.status_code == 400 and "input" in resp.json()["error"]["message"]
    assert fake.violations


@pytest.mark.parametrize(("fmt", "seconds"), [("wav", 1.5), ("mp3", 1.5), ("flac", 1.5)])
def test_speech_audio_is_a_real_file_of_its_format(fmt: str, seconds: float) -> None:
    parsed: Any = mutagen.File(io.BytesIO(speech_audio(fmt, seconds)))
    assert parsed is not None and parsed.info.length == pytest.approx(seconds, abs=0.03)


async def test_a_streamed_transcription_is_openais_events(fake: FakeOpenAI, sdk: Callable[..., Any]) -> None:
    client = sdk(fake, _strict_response_validation=True)
    stream = await client.audio.transcriptions.create(file=("a.wav", wav(1.0)), model="gpt-4o-mini-transcribe",
                                                      stream=True)
    events = [event.model_dump(exclude_none=True) async for event in stream]
    for event in events:
        validate("CreateTranscriptionResponseStreamEvent", event)
    assert events[-1]["type"] == "transcript.text.done" and events[-1]["usage"]["input_tokens"] == 10
