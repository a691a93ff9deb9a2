"""``POST /v1/audio/transcriptions`` and ``/v1/audio/translations`` with a bad form are a 400
naming the field, in OpenAI's error shape; nothing reaches the upstream and nothing is charged.
The tests share one gateway, one fake upstream and one key: none of them reaches the upstream
or bills."""

from __future__ import annotations

import io
import wave
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI, upstream_channel
from faregate_adapter_openai.testing.schema import validate_error

pytestmark = pytest.mark.asyncio(loop_scope="module")


def wav(seconds: float, rate: int = 16_000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(rate)
        audio.writeframes(bytes(2 * round(seconds * rate)))
    return out.getvalue()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream(module_admin: AdminClient) -> AsyncIterator[tuple[FakeOpenAI, str]]:
    """The fake upstream, a channel to it and a key."""
    models = "whisper-1,gpt-4o-transcribe,gpt-4o-transcribe-diarize"
    async with upstream_channel(module_admin, models, remain_quota=50 * 500_000) as found:
        yield found



@pytest.mark.parametrize(("path", "data", "files", "param"), [
    ("/v1/audio/transcriptions", {"model": "whisper-1"}, {}, "file"),
    ("/v1/audio/transcriptions", {"response_format": "xml"}, None, "response_format"),
    ("/v1/audio/transcriptions", {"response_format": "diarized_json"}, None, "response_format"),
    ("/v1/audio/translations", {"response_format": "diarized_json", "model": "x-diarize"}, None, "response_format"),
    ("/v1/audio/translations", {"language": "en"}, None, "language"),
    ("/v1/audio/transcriptions", {"temperature": "1.5"}, None, "temperature"),
    ("/v1/audio/transcriptions", {"stream": "yes"}, None, "stream"),
    ("/v1/audio/transcriptions", {"timestamp_granularities[]": "char"}, None, "timestamp_granularities"),
    ("/v1/audio/transcriptions", {"chunking_strategy": "manual"}, None, "chunking_strategy"),
    ("/v1/audio/transcriptions", {"surprise": "1"}, None, "surprise"),
    ("/v1/audio/transcriptions", {"file": "not a file"}, {"other": ("x.wav", b"RIFF")}, "file"),
    ("/v1/audio/transcriptions", {}, {"file": ("notes.txt", b"hello")}, "file"),
    ("/v1/audio/transcriptions", {}, {"file": ("empty.wav", b"")}, "file"),
])
async def test_a_bad_form_is_a_400_naming_the_field(module_gateway: GatewayServer,
                                                    upstream: tuple[FakeOpenAI, str], path: str,
                                                    data: dict[str, str], files: dict[str, Any] | None,
                                                    param: str) -> None:
    gateway = module_gateway
    fake_openai, key = upstream
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post(path, data=data, files=files if files is not None else {"file": ("a.wav", wav(1))},
                               headers={"Authorization": f"Bearer {key}"})
    assert resp.status_code == 400, resp.text
    assert validate_error(resp.json())["error"]["param"] == param
    assert not fake_openai.requests and await gateway.consume_logs() == []
