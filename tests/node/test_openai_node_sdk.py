"""The official OpenAI Node SDK (``openai`` on npm, pinned in ``package.json``) as a client
of the gateway: the same endpoints the Python SDK tests cover, each case a function in
``cases.mjs``, run in one ``node`` process per test against a gateway whose channels point
at the fake OpenAI. ``./dev setup`` installs the package (``npm ci``); without ``node`` the
tests fail unless ``FAREGATE_SKIP_NODE=1`` says the machine has none on purpose."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from faregate import jsonutil
from faregate.db import models as m
from faregate_adapter_openai.testing.chat import REPLY_PREFIX, TOOL_ARGUMENTS
from faregate_adapter_openai.testing.completions import COMPLETION_PREFIX
from faregate_adapter_openai.testing.embeddings import vector

HERE = Path(__file__).parent
NODE = shutil.which("node")
CHAT_MODEL = "gpt-4o-mini"
EMBED_MODEL = "text-embedding-3-small"
MODERATION_MODEL = "omni-moderation-latest"

if NODE is None or not (HERE / "node_modules" / "openai").is_dir():
    if os.environ.get("FAREGATE_SKIP_NODE") == "1":
        pytest.skip("FAREGATE_SKIP_NODE=1: no Node.js here", allow_module_level=True)
    raise RuntimeError("the Node SDK tests need node and `npm ci` in tests/node (./dev setup does it); "
                       "set FAREGATE_SKIP_NODE=1 on a machine without Node.js")


async def run_cases(base_url: str, key: str, cases: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Each case's line from ``run_cases.mjs``, by case name."""
    assert NODE is not None
    env = {**os.environ, "FAREGATE_BASE_URL": base_url + "/v1", "FAREGATE_API_KEY": key}
    proc = await asyncio.create_subprocess_exec(NODE, str(HERE / "run_cases.mjs"), jsonutil.dumps_str(cases),
                                                cwd=HERE, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    lines = [jsonutil.loads(line) for line in out.splitlines() if line.strip()]
    assert [line["case"] for line in lines] == [name for name, _ in cases], err.decode()
    return {line["case"]: line for line in lines}


def ok(results: dict[str, Any], case: str) -> Any:
    line = results[case]
    assert line["ok"], f"{case}: {line['error']}"
    return line["result"]


@pytest.fixture
async def key(gateway: Any, admin: Any, fake_openai: Any) -> str:
    await admin.add_channel(base_url=fake_openai.base_url,
                            models=f"{CHAT_MODEL},{EMBED_MODEL},{MODERATION_MODEL}")
    token: str = await admin.add_token(remain_quota=5_000_000)
    return token


async def test_chat_embeddings_moderations_and_models(gateway: Any, key: str, fake_openai: Any) -> None:
    results = await run_cases(gateway.base_url, key, [
        ("chat", {"model": CHAT_MODEL}), ("chat_stream", {"model": CHAT_MODEL}), ("chat_tools", {"model": CHAT_MODEL}),
        ("embeddings", {"model": EMBED_MODEL}), ("moderations", {"model": MODERATION_MODEL}), ("models", {}),
        ("unknown_model", {}),
    ])
    chat = ok(results, "chat")
    assert chat["content"] == REPLY_PREFIX + "hello from node" and chat["object"] == "chat.completion"
    assert chat["usage"]["total_tokens"] == chat["usage"]["prompt_tokens"] + chat["usage"]["completion_tokens"]
    stream = ok(results, "chat_stream")
    assert stream["content"] == REPLY_PREFIX + "stream to node" and stream["usage"]["completion_tokens"] > 0
    tools = ok(results, "chat_tools")
    assert tools == {"name": "get_weather", "arguments": jsonutil.loads(TOOL_ARGUMENTS), "finish": "tool_calls"}
    embeddings = ok(results, "embeddings")
    assert embeddings["lengths"] == [16, 16]
    assert embeddings["first"] == pytest.approx(vector("first", 16))
    (sent,) = [r["json"] for r in fake_openai.requests if r["path"] == "/v1/embeddings"]
    assert sent["encoding_format"] == "base64"  # what the Node SDK asks for
    assert ok(results, "moderations") == {"flagged": True, "violence": True}
    assert {CHAT_MODEL, EMBED_MODEL, MODERATION_MODEL} <= set(ok(results, "models")["ids"])
    refused = results["unknown_model"]
    assert not refused["ok"] and refused["error"]["status"] in (404, 503)
    assert refused["error"]["code"] == "model_not_found"

    await gateway.gateway.ledger.flush()
    rows = await m.Log.filter(type=m.LOG_CONSUME).order_by("id")
    assert [r.model_name for r in rows] == [CHAT_MODEL] * 3 + [EMBED_MODEL, MODERATION_MODEL]
    assert all(r.quota > 0 for r in rows)


async def test_completions_responses_images_and_audio(gateway: Any, admin: Any, fake_openai: Any) -> None:
    models = {"completions": "gpt-3.5-turbo-instruct", "responses": CHAT_MODEL, "images": "dall-e-3",
              "image_edit": "gpt-image-1", "transcription": "whisper-1", "speech": "tts-1"}
    await admin.set_option("ModelRatio", {"gpt-3.5-turbo-instruct": 0.75, CHAT_MODEL: 0.075})
    await admin.add_channel(base_url=fake_openai.base_url, models=",".join(sorted(set(models.values()))))
    key: str = await admin.add_token(remain_quota=50_000_000)
    results = await run_cases(gateway.base_url, key, [
        ("completions", {"model": models["completions"]}), ("completions_stream", {"model": models["completions"]}),
        ("responses", {"model": CHAT_MODEL}), ("responses_stream", {"model": CHAT_MODEL}),
        ("images", {"model": models["images"]}), ("image_edit", {"model": models["image_edit"]}),
        ("transcription", {"model": models["transcription"]}), ("speech", {"model": models["speech"]}),
    ])
    completion = ok(results, "completions")
    assert completion["object"] == "text_completion" and completion["text"].startswith(COMPLETION_PREFIX)
    assert completion["usage"]["completion_tokens"] > 0
    streamed = ok(results, "completions_stream")
    assert streamed["text"].startswith(COMPLETION_PREFIX) and streamed["usage"]["total_tokens"] > 0
    response = ok(results, "responses")
    assert response["text"] == REPLY_PREFIX + "hello responses" and response["status"] == "completed"
    assert response["object"] == "response" and response["usage"]["output_tokens"] > 0
    stream = ok(results, "responses_stream")
    assert stream["text"] == REPLY_PREFIX + "streamed responses"
    assert (stream["first"], stream["last"]) == ("response.created", "response.completed")
    images = ok(results, "images")
    assert images["count"] == 1 and (images["url"] or images["b64"])
    edit = ok(results, "image_edit")
    assert edit["count"] == 1 and edit["b64"] and edit["usage"]["total_tokens"] > 0
    assert ok(results, "transcription")["text"].startswith("Transcribed 1.00 seconds of hello.wav")
    speech = ok(results, "speech")
    assert speech["riff"] == "RIFF" and speech["type"].startswith("audio/wav") and speech["size"] > 44

    await gateway.gateway.ledger.flush()
    rows = await m.Log.filter(type=m.LOG_CONSUME).order_by("id")
    assert [r.model_name for r in rows] == [models["completions"]] * 2 + [CHAT_MODEL] * 2 + [
        models["images"], models["image_edit"], models["transcription"], models["speech"]]
    assert all(r.quota > 0 for r in rows)
