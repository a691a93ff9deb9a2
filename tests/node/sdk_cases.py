"""The official OpenAI Node SDK on every endpoint of the OpenAI family: the cases
(:data:`EVERY_CASE`, one or more per endpoint, each a function of ``cases.mjs``), the
channels they need (:func:`add_channels`: the fake OpenAI, the fake Jina for rerank, a
Codex channel for alpha search), one ``node`` process running them all (:func:`run_cases`)
with every raw answer the SDK received held to OpenAI's schema (the Node SDK has no strict
validation: :mod:`faregate_adapter_openai.testing.answers` does it here), and what each
case must give (:func:`check_every_case`).

Used by ``test_openai_node_sdk.py`` (an in-process gateway, its bills checked too) and by
``tests/test_install.py`` (a gateway installed from wheels with only the core and the OpenAI
adapter); loaded by path, since the test directories are no package. ``./dev setup``
installs the SDK (``npm ci``); without ``node`` the tests fail unless ``FAREGATE_SKIP_NODE=1``
says the machine has none on purpose.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from faregate import jsonutil
from faregate_adapter_openai.testing.answers import Answer, check_answer
from faregate_adapter_openai.testing.chat import REPLY_PREFIX, TOOL_ARGUMENTS
from faregate_adapter_openai.testing.completions import COMPLETION_PREFIX
from faregate_adapter_openai.testing.embeddings import vector

HERE = Path(__file__).parent
NODE = shutil.which("node")

CHAT, CHAT_ONLY, INSTRUCT = "gpt-4o-mini", "deepseek-chat", "gpt-3.5-turbo-instruct"
EMBED, MODERATION, DEFAULT_MODERATION = "text-embedding-3-small", "omni-moderation-latest", "text-moderation-stable"
DALL_E, GPT_IMAGE = "dall-e-3", "gpt-image-1"
WHISPER, TRANSCRIBE, TTS, TTS_SSE = "whisper-1", "gpt-4o-transcribe", "tts-1", "gpt-4o-mini-tts"
RERANKER, SEARCH = "jina-reranker-v2-base-multilingual", "gpt-5-codex"
COMPACT = CHAT + "-openai-compact"  # new-api's model name of a compaction (what the channel lists)
OPENAI_MODELS = (CHAT, INSTRUCT, EMBED, MODERATION, DEFAULT_MODERATION, DALL_E, GPT_IMAGE, WHISPER, TRANSCRIBE, TTS,
                 TTS_SSE, COMPACT)
CODEX_KEY = "sk-fake-codex-access"  # the Codex fake's bearer credential
DOCUMENTS = ["New makeup trends focus on bold colors", "Organic skincare for sensitive skin with aloe vera",
             "Skincare tips for dry skin"]
QUOTA = 50_000_000  # the key's quota: $100
#: the 501 paths of new-api (files, fine-tunes, image variations, deleting a model)
NOT_IMPLEMENTED: list[tuple[str, str, dict[str, Any]]] = [
    ("files_list", "files_list", {}), ("image_variation", "image_variation", {}),
    ("model_delete", "model_delete", {"model": CHAT}),
    ("file_get", "raw", {"method": "get", "path": "/files/file-1"}),
    ("file_delete", "raw", {"method": "delete", "path": "/files/file-1"}),
    ("fine_tunes_list", "raw", {"method": "get", "path": "/fine-tunes"}),
    ("fine_tune_cancel", "raw", {"method": "post", "path": "/fine-tunes/ft-1/cancel"}),
]
#: ``(label, case, params)`` for every endpoint; the billing reads first, before anything is spent
EVERY_CASE: list[tuple[str, str, dict[str, Any]]] = [
    ("subscription", "billing", {"which": "subscription"}),
    ("subscription_at_root", "billing", {"which": "subscription", "atRoot": True}),
    ("usage", "billing", {"which": "usage", "query": {"start_date": "2026-11-01", "end_date": "2026-11-25"}}),
    ("usage_at_root", "billing", {"which": "usage", "atRoot": True}),
    ("chat", "chat", {"model": CHAT}), ("chat_stream", "chat_stream", {"model": CHAT}),
    ("chat_tools", "chat_tools", {"model": CHAT}),
    ("embeddings", "embeddings", {"model": EMBED}), ("embeddings_float", "embeddings_float", {"model": EMBED}),
    ("engines_embeddings", "engines_embeddings", {"model": EMBED}),
    ("moderations", "moderations", {"model": MODERATION}),
    ("moderations_default_model", "moderations_default_model", {}),
    ("models", "models", {}),
    ("completions", "completions", {"model": INSTRUCT}),
    ("completions_stream", "completions_stream", {"model": INSTRUCT}),
    ("responses", "responses", {"model": CHAT}), ("responses_stream", "responses_stream", {"model": CHAT}),
    ("responses_chat_only", "responses", {"model": CHAT_ONLY}),
    ("responses_stream_chat_only", "responses_stream", {"model": CHAT_ONLY}),
    ("responses_compact", "responses_compact", {"model": CHAT}),
    ("responses_cache_retention", "responses_cache_retention", {"model": CHAT}),
    ("images", "images", {"model": DALL_E}), ("images_stream", "images_stream", {"model": GPT_IMAGE}),
    ("image_edit", "image_edit", {"model": GPT_IMAGE}),
    ("image_edit_stream", "image_edit_stream", {"model": GPT_IMAGE}),
    ("image_edit_markup", "image_edit_markup", {"model": GPT_IMAGE}),
    ("edits", "edits", {"model": GPT_IMAGE}),
    ("transcription", "transcription", {"model": WHISPER}),
    ("transcription_verbose", "transcription_verbose", {"model": WHISPER}),
    ("transcription_stream", "transcription_stream", {"model": TRANSCRIBE}),
    ("transcription_keywords", "transcription_keywords", {"model": TRANSCRIBE}),
    ("translation", "translation", {"model": WHISPER}), ("translation_text", "translation_text", {"model": WHISPER}),
    ("speech", "speech", {"model": TTS}), ("speech_sse", "speech_sse", {"model": TTS_SSE}),
    ("rerank", "rerank", {"model": RERANKER, "query": "organic skincare for sensitive skin", "documents": DOCUMENTS}),
    ("alpha_search", "alpha_search", {"model": SEARCH}),
    *NOT_IMPLEMENTED,
    ("unknown_model", "unknown_model", {}),
]
#: the cases that cost nothing: billing reads, the model list, refusals
FREE = {"billing", "models", "unknown_model", "files_list", "image_variation", "model_delete", "raw"}
#: the model each billed case is logged under (a compaction under new-api's name of it)
BILLED: dict[str, str] = {label: COMPACT if case == "responses_compact" else params.get("model", DEFAULT_MODERATION)
                          for label, case, params in EVERY_CASE if case not in FREE}


def node_ready() -> bool:
    """Whether ``node`` and the SDK are installed: False on a machine declared to have no
    Node.js (``FAREGATE_SKIP_NODE=1``), an error where they should be and are not."""
    if NODE is not None and (HERE / "node_modules" / "openai").is_dir():
        return True
    if os.environ.get("FAREGATE_SKIP_NODE") == "1":
        return False
    raise RuntimeError("the Node SDK tests need node and `npm ci` in tests/node (./dev setup does it); "
                       "set FAREGATE_SKIP_NODE=1 on a machine without Node.js")


async def add_prices(admin: Any, option: str, prices: dict[str, float]) -> None:
    """``prices`` added to the gateway's table ``option`` (a stored table replaces the built-in one
    whole, as new-api's: the built-in prices of the other models are kept by reading it first)."""
    table = next(o["value"] for o in await admin.ok("GET", "/api/option/") if o["key"] == option)
    await admin.set_option(option, {**jsonutil.loads(table or "{}"), **prices})


async def add_channels(admin: Any, *, openai_base: str, jina_base: str, codex_base: str) -> str:
    """The prices and channels every case needs; a key of :data:`QUOTA`."""
    await add_prices(admin, "ModelRatio", {INSTRUCT: 0.75, CHAT: 0.075, CHAT_ONLY: 0.135, TRANSCRIBE: 1.25,
                                           RERANKER: 0.01, "*-openai-compact": 0.5})
    await add_prices(admin, "ModelPrice", {SEARCH: 0.01})
    await admin.add_channel(base_url=openai_base, models=",".join(OPENAI_MODELS), name="openai")
    await admin.add_channel(base_url=openai_base, models=CHAT_ONLY, type=43, name="chat-only")
    await admin.add_channel(base_url=jina_base, models=RERANKER, type=38, name="jina")
    codex = jsonutil.dumps_str({"access_token": CODEX_KEY, "account_id": "acct-1"})
    await admin.add_channel(base_url=codex_base, models=SEARCH, type=57, key=codex, name="codex")
    key: str = await admin.add_token(remain_quota=QUOTA)
    return key


async def run_cases(base_url: str, key: str, cases: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """Each case's line from one ``node run_cases.mjs`` process, by label, every answer it
    received validated (``line["checked"]``: what each carried, ``line["bodies"]``: its bytes)."""
    assert node_ready() and NODE is not None
    env = {**os.environ, "FAREGATE_BASE_URL": base_url + "/v1", "FAREGATE_API_KEY": key}
    proc = await asyncio.create_subprocess_exec(NODE, str(HERE / "run_cases.mjs"), jsonutil.dumps_str(cases),
                                                cwd=HERE, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    lines = [jsonutil.loads(line) for line in out.splitlines() if line.strip()]
    assert [line["label"] for line in lines] == [label for label, _, _ in cases], err.decode()
    for line in lines:
        assert line["answers"], f"{line['label']}: no answer received"
        line["bodies"] = []
        line["checked"] = []
        for raw in line["answers"]:
            assert "read_error" not in raw, f"{line['label']}: {raw['read_error']}"
            body = base64.b64decode(raw["body"])
            answer = Answer(raw["method"], raw["path"], raw["status"], raw["content_type"], bytearray(body))
            try:
                line["checked"].append(check_answer(answer))
            except Exception as exc:
                raise AssertionError(f"{line['label']}: {answer.method} {answer.path}: {exc}") from exc
            line["bodies"].append(body)
    return {line["label"]: line for line in lines}


def ok(results: dict[str, Any], label: str) -> Any:
    line = results[label]
    assert line["ok"], f"{label}: {line['error']}"
    return line["result"]


def check_every_case(results: dict[str, Any]) -> None:
    """What each case of :data:`EVERY_CASE` must have given (its answers already validated)."""
    subscription = {"object": "billing_subscription", "has_payment_method": True, "soft_limit_usd": 100.0,
                    "hard_limit_usd": 100.0, "system_hard_limit_usd": 100.0, "access_until": 0}
    assert ok(results, "subscription") == ok(results, "subscription_at_root") == subscription
    assert ok(results, "usage") == ok(results, "usage_at_root") == {"object": "list", "total_usage": 0.0}

    chat = ok(results, "chat")
    assert chat["content"] == REPLY_PREFIX + "hello from node" and chat["object"] == "chat.completion"
    assert chat["usage"]["total_tokens"] == chat["usage"]["prompt_tokens"] + chat["usage"]["completion_tokens"]
    stream = ok(results, "chat_stream")
    assert stream["content"] == REPLY_PREFIX + "stream to node" and stream["usage"]["completion_tokens"] > 0
    tools = ok(results, "chat_tools")
    assert tools == {"name": "get_weather", "arguments": jsonutil.loads(TOOL_ARGUMENTS), "finish": "tool_calls"}

    embeddings = ok(results, "embeddings")
    assert embeddings["lengths"] == [16, 16] and embeddings["first"] == pytest.approx(vector("first", 16))
    raw = jsonutil.loads(results["embeddings"]["bodies"][0])
    assert isinstance(raw["data"][0]["embedding"], str)  # the SDK's default: base64, decoded by it
    floats = ok(results, "embeddings_float")
    assert floats["lengths"] == [8] and floats["first"] == pytest.approx(vector([1, 2, 3], 8))
    assert ok(results, "engines_embeddings") == {"lengths": [16], "model": EMBED}
    assert ok(results, "moderations") == {"flagged": True, "violence": True}
    assert ok(results, "moderations_default_model") == {"model": DEFAULT_MODERATION, "flagged": False}
    assert {CHAT, EMBED, MODERATION, SEARCH, RERANKER, CHAT_ONLY} <= set(ok(results, "models")["ids"])

    completion = ok(results, "completions")
    assert completion["object"] == "text_completion" and completion["text"].startswith(COMPLETION_PREFIX)
    assert completion["usage"]["completion_tokens"] > 0
    streamed = ok(results, "completions_stream")
    assert streamed["text"].startswith(COMPLETION_PREFIX) and streamed["usage"]["total_tokens"] > 0

    for suffix in ("", "_chat_only"):
        response = ok(results, "responses" + suffix)
        assert response["text"] == REPLY_PREFIX + "hello responses" and response["status"] == "completed"
        assert response["object"] == "response" and response["usage"]["output_tokens"] > 0
        events = ok(results, "responses_stream" + suffix)
        assert events["text"] == REPLY_PREFIX + "streamed responses"
        assert (events["first"], events["last"]) == ("response.created", "response.completed")
    retained = ok(results, "responses_cache_retention")  # the spec's in_memory (issue 28)
    assert retained == {"text": REPLY_PREFIX + "cache this", "status": "completed"}
    compacted = ok(results, "responses_compact")
    assert compacted["object"] == "response.compaction" and compacted["types"][-1] == "compaction"
    assert compacted["usage"]["output_tokens"] > 0

    images = ok(results, "images")
    assert images["count"] == 1 and (images["url"] or images["b64"])
    image_stream = ok(results, "images_stream")
    assert image_stream["types"] == ["image_generation.partial_image", "image_generation.completed"]
    assert image_stream["usage"]["output_tokens"] > 0
    edit = ok(results, "image_edit")
    assert edit["count"] == 1 and edit["b64"] and edit["usage"]["total_tokens"] > 0
    assert ok(results, "image_edit_stream")["types"] == ["image_edit.partial_image", "image_edit.completed"]
    assert ok(results, "edits") == {"count": 1, "b64": True}
    assert ok(results, "image_edit_markup") == {"count": 1, "b64": True}

    assert ok(results, "transcription")["text"] == f"Transcribed 1.00 seconds of hello.wav with {WHISPER}"
    verbose = ok(results, "transcription_verbose")
    assert verbose["duration"] == 1.0 and verbose["words"] == len(verbose["text"].split())
    transcript = ok(results, "transcription_stream")
    assert transcript["types"][-1] == "transcript.text.done"
    assert set(transcript["types"][:-1]) == {"transcript.text.delta"}
    assert transcript["text"] == f"Transcribed 1.00 seconds of s.wav with {TRANSCRIBE}"
    assert ok(results, "transcription_keywords")["text"] == f"Transcribed 1.00 seconds of words.wav with {TRANSCRIBE}"
    assert ok(results, "translation")["text"] == f"Translated 1.00 seconds of bonjour.wav with {WHISPER}"
    srt = ok(results, "translation_text")["text"]
    assert "00:00:00,000 --> 00:00:01,000" in srt and f"Translated 1.00 seconds of plain.wav with {WHISPER}" in srt
    speech = ok(results, "speech")
    assert speech["riff"] == "RIFF" and speech["type"].startswith("audio/wav") and speech["size"] > 44
    sse = ok(results, "speech_sse")
    assert sse["type"].startswith("text/event-stream") and sse["types"][-1] == "speech.audio.done"
    assert set(sse["types"][:-1]) == {"speech.audio.delta"}

    rerank = ok(results, "rerank")
    assert rerank["indexes"] == [1, 2] and rerank["document"] == {"text": DOCUMENTS[1]}
    assert rerank["usage"]["total_tokens"] == rerank["usage"]["prompt_tokens"] > 0
    search = ok(results, "alpha_search")
    assert search["model"] == SEARCH and search["output"]

    for label, _, _ in NOT_IMPLEMENTED:
        refused = results[label]
        assert not refused["ok"], label
        assert refused["error"] | {"message": None} == {"status": 501, "type": "new_api_error",
                                                        "code": "api_not_implemented", "message": None}, label
    refused = results["unknown_model"]
    assert not refused["ok"] and refused["error"]["status"] == 404  # OpenAI's, final: the SDKs do not retry it
    assert (refused["error"]["code"], refused["error"]["type"]) == ("model_not_found", "invalid_request_error")
