"""What the official ``openai`` SDK sends today passes the gateway (issue 28, item 9): a
Responses request's ``prompt_cache_retention: "in_memory"`` (the spec's spelling), an image
edit's ``markup`` file, a transcription's ``keywords`` and ``languages``. On an OpenAI channel
each goes upstream as the client sent it (the fake validating it against OpenAI's schema);
converted to another vendor, ``prompt_cache_retention`` is not sent and the Response echoes
it. Every field and value the installed SDK declares is walked in
``tests/test_openai_sdk_params.py``."""

from __future__ import annotations

import io
import wave
from typing import Any

import openai
import pytest

from faregate_adapter_anthropic.testing import FakeAnthropic
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.images import TINY_PNG, form_dict

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the SDK warns about model names

GPT, CLAUDE, IMAGE, STT = "gpt-4o-mini", "claude-sonnet-4-5", "gpt-image-1", "gpt-4o-transcribe"


def wav() -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(16_000)
        audio.writeframes(bytes(32_000))
    return out.getvalue()


@pytest.fixture
async def client(gateway: Any, admin: Any, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic) -> Any:
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{GPT},{IMAGE},{STT}")
    await admin.add_channel(base_url=fake_anthropic.base_url, models=CLAUDE, type=14, key=FAKE_ANTHROPIC_KEY,
                            name="anthropic")
    await admin.set_option("ModelRatio", {GPT: 1, CLAUDE: 1, IMAGE: 2.5, STT: 1})
    key = await admin.add_token(remain_quota=50_000_000)
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                             _strict_response_validation=True)
    yield sdk
    await sdk.close()


def upstream_form(fake: FakeOpenAI) -> dict[str, Any]:
    sent = fake.requests[-1]
    form = form_dict(sent["body"], sent["headers"]["content-type"])
    assert form is not None
    return form


@pytest.mark.parametrize("retention", ["in_memory", "24h"])
async def test_prompt_cache_retention_goes_to_openai_as_sent(client: Any, fake_openai: FakeOpenAI,
                                                             retention: str) -> None:
    resp = await client.responses.create(model=GPT, input="hello", prompt_cache_key="conv-1",
                                         prompt_cache_retention=retention)
    assert resp.status == "completed"
    assert fake_openai.requests[-1]["json"]["prompt_cache_retention"] == retention


async def test_prompt_cache_retention_is_not_sent_when_converted(client: Any,
                                                                 fake_anthropic: FakeAnthropic) -> None:
    resp = await client.responses.create(model=CLAUDE, input="hello", prompt_cache_retention="in_memory")
    assert resp.status == "completed" and resp.prompt_cache_retention == "in_memory"  # echoed
    upstream = fake_anthropic.requests[-1]["json"]
    assert "prompt_cache_retention" not in upstream


async def test_a_retention_openai_does_not_know_is_a_400_naming_it(client: Any, fake_openai: FakeOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model=GPT, input="hello", prompt_cache_retention="forever")
    assert caught.value.param == "prompt_cache_retention"
    assert fake_openai.requests == []


async def test_an_image_edit_with_markup(client: Any, fake_openai: FakeOpenAI) -> None:
    result = await client.images.edit(model=IMAGE, prompt="add a moon", image=("in.png", TINY_PNG, "image/png"),
                                      markup=("markup.png", TINY_PNG, "image/png"))
    assert result.data
    assert upstream_form(fake_openai)["markup"].startswith("<file markup.png (image/png")


async def test_markup_and_a_mask_together_are_a_400(client: Any, fake_openai: FakeOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.images.edit(model=IMAGE, prompt="add a moon", image=("in.png", TINY_PNG, "image/png"),
                                 mask=("mask.png", TINY_PNG, "image/png"),
                                 markup=("markup.png", TINY_PNG, "image/png"))
    assert caught.value.param == "markup"
    assert fake_openai.requests == []


async def test_a_transcription_with_keywords_and_languages(client: Any, fake_openai: FakeOpenAI) -> None:
    result = await client.audio.transcriptions.create(model=STT, file=("a.wav", wav(), "audio/wav"),
                                                      keywords=["Faregate", "new-api"], languages=["en", "de"])
    assert result.text
    sent = fake_openai.requests[-1]
    form = form_dict(sent["body"], sent["headers"]["content-type"])
    assert form is not None
    assert form["keywords"] == ["Faregate", "new-api"] and form["languages"] == ["en", "de"]


async def test_too_many_keywords_are_a_400_naming_the_field(client: Any, fake_openai: FakeOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.audio.transcriptions.create(model=STT, file=("a.wav", wav(), "audio/wav"),
                                                 keywords=[f"word{i}" for i in range(33)])
    assert caught.value.param == "keywords"
    assert fake_openai.requests == []
