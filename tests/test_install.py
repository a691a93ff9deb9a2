"""``pip install ./core ./plugins/adapters/openai`` alone is a working gateway that
speaks the OpenAI format and nothing else (a fresh virtual environment, real wheels)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import io
import json
import os
import shutil
import subprocess
import sys
import time
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types import CreateEmbeddingResponse, ImagesResponse

from faregate.testing.fake_server import assert_no_violations
from faregate.testing.harness import AdminClient, free_port
from faregate_adapter_openai.testing import REPLY_PREFIX, FakeOpenAI
from faregate_adapter_openai.testing.answers import Recorder
from faregate_adapter_openai.testing.completions import COMPLETION_PREFIX

ROOT = Path(__file__).resolve().parents[1]


def _load_node_cases() -> Any:
    # tests/ is no package: the Node SDK's shared cases are loaded by path
    spec = importlib.util.spec_from_file_location("faregate_node_sdk_cases", ROOT / "tests" / "node" / "sdk_cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sdk_cases = _load_node_cases()


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not os.path.exists(found):
        pytest.skip("uv is not installed")
    return found


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # the SDK's translations and variations
async def test_core_and_openai_adapter_alone(tmp_path: Path, fake_openai: Any, fake_jina: Any,
                                            request: pytest.FixtureRequest) -> None:
    uv = _uv()
    venv = tmp_path / "venv"
    python = str(venv / "bin" / "python")

    def install() -> str:
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=120)
        subprocess.run([uv, "pip", "install", "-q", "--python", python, "./core", "./plugins/adapters/openai"],
                       cwd=ROOT, check=True, timeout=600)
        return subprocess.run([uv, "pip", "list", "--python", python], capture_output=True, text=True,
                              check=True).stdout

    listed = await asyncio.to_thread(install)
    assert "faregate-adapter-openai" in listed and "faregate-adapter-anthropic" not in listed
    # typed packages (PEP 561): type checkers read the installed code's annotations
    site = next((venv / "lib").glob("python*/site-packages"))
    assert (site / "faregate" / "py.typed").exists() and (site / "faregate_adapter_openai" / "py.typed").exists()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAREGATE_")}
    env["FAREGATE_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.Popen([str(venv / "bin" / "faregate"), "serve", "--port", str(port)], env=env,  # noqa: ASYNC220
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            deadline = time.time() + 60
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    status = await http.get("/api/status", timeout=2)
                    if status.status_code == 200:
                        break
                assert proc.poll() is None and time.time() < deadline, "the installed gateway did not start"
                await asyncio.sleep(0.2)
            assert status.json()["data"]["formats"] == ["openai.chat", "openai.responses"]
            chat = await http.post("/v1/chat/completions", json={"model": "m", "messages": []})
            assert chat.status_code == 401 and chat.json()["error"]["code"] == "invalid_api_key"
            assert (await http.post("/v1/messages", json={})).status_code == 404
        async with FakeOpenAI(api_key=sdk_cases.CODEX_KEY) as codex:
            admin = AdminClient(base)
            try:
                await admin.setup_root()
                key = await sdk_cases.add_channels(admin, openai_base=fake_openai.base_url,
                                                   jina_base=fake_jina.base_url, codex_base=codex.base_url)
                node_key = await admin.add_token(remain_quota=sdk_cases.QUOTA, name="node")
            finally:
                await admin.close()
            await _every_openai_endpoint(base, key)
            if sdk_cases.node_ready():  # the official Node SDK on every endpoint too
                sdk_cases.check_every_case(await sdk_cases.run_cases(base, node_key, sdk_cases.EVERY_CASE))
        assert_no_violations(codex, request.node, "Codex")
    finally:
        proc.terminate()
        await asyncio.to_thread(proc.wait, 30)


PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
       b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\xdac\xfc\xcf\xc0P\x0f\x00\x04\x85\x01\x80\x84\xa9"
       b"\x8c!\x00\x00\x00\x00IEND\xaeB`\x82")
IMAGE = ("in.png", PNG, "image/png")
HI = [{"role": "user", "content": "hi"}]


def _silent_wav(seconds: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16_000)
        out.writeframes(b"\x00\x00" * 16_000 * seconds)
    return buffer.getvalue()


def _wav(name: str) -> tuple[str, bytes, str]:
    return (name, _silent_wav(seconds=1), "audio/wav")


def _refused(status: int, code: str, kind: str = "new_api_error") -> Callable[[Any], bool]:
    def check(error: Any) -> bool:
        return (isinstance(error, openai.APIStatusError) and error.status_code == status
                and (error.code, error.type) == (code, kind))

    return check


#: ``(label, call, check)`` on every endpoint of the OpenAI family. ``call(sdk)`` works on the
#: sync and the async client alike (:func:`_settle` waits, drains streams, reads bodies);
#: ``check`` holds what came back. The answers themselves are validated raw by the recorder.
_CALLS: list[tuple[str, Callable[[Any], Any], Callable[[Any], object]]] = [
    ("chat", lambda s: s.chat.completions.create(model=sdk_cases.CHAT, messages=HI),
     lambda r: r.choices[0].message.content == REPLY_PREFIX + "hi"),
    ("chat_stream", lambda s: s.chat.completions.create(model=sdk_cases.CHAT, messages=HI, stream=True,
                                                        stream_options={"include_usage": True}),
     lambda r: "".join(c.choices[0].delta.content or "" for c in r if c.choices) == REPLY_PREFIX + "hi"),
    ("completions", lambda s: s.completions.create(model=sdk_cases.INSTRUCT, prompt="once"),
     lambda r: r.choices[0].text.startswith(COMPLETION_PREFIX)),
    ("embeddings_float", lambda s: s.embeddings.create(model=sdk_cases.EMBED, input="x", encoding_format="float",
                                                       dimensions=8),
     lambda r: len(r.data[0].embedding) == 8),
    ("engines_embeddings", lambda s: s.post(f"/engines/{sdk_cases.EMBED}/embeddings", body={"input": "x"},
                                            cast_to=CreateEmbeddingResponse),
     lambda r: len(r.data[0].embedding) == 16),
    ("moderations", lambda s: s.moderations.create(model=sdk_cases.MODERATION, input="I will kill the process"),
     lambda r: r.results[0].flagged),
    ("moderations_default_model", lambda s: s.moderations.create(input="calm"),
     lambda r: r.model == sdk_cases.DEFAULT_MODERATION),
    ("models", lambda s: s.models.list(), lambda r: sdk_cases.SEARCH in {m.id for m in r.data}),
    ("responses", lambda s: s.responses.create(model=sdk_cases.CHAT, input="hello"),
     lambda r: r.output_text == REPLY_PREFIX + "hello" and r.status == "completed"),
    ("responses_stream", lambda s: s.responses.create(model=sdk_cases.CHAT, input="stream", stream=True),
     lambda r: (r[0].type, r[-1].type) == ("response.created", "response.completed")),
    ("responses_chat_only", lambda s: s.responses.create(model=sdk_cases.CHAT_ONLY, input="hello"),
     lambda r: r.output_text == REPLY_PREFIX + "hello"),
    ("responses_stream_chat_only", lambda s: s.responses.create(model=sdk_cases.CHAT_ONLY, input="s", stream=True),
     lambda r: r[-1].response.output_text == REPLY_PREFIX + "s"),
    ("images", lambda s: s.images.generate(model=sdk_cases.DALL_E, prompt="a cat"), lambda r: len(r.data) == 1),
    ("images_stream", lambda s: s.images.generate(model=sdk_cases.GPT_IMAGE, prompt="a comet", stream=True,
                                                  partial_images=1),
     lambda r: [e.type for e in r] == ["image_generation.partial_image", "image_generation.completed"]),
    ("image_edit", lambda s: s.images.edit(model=sdk_cases.GPT_IMAGE, prompt="blue", image=IMAGE),
     lambda r: r.data[0].b64_json),
    ("image_edit_stream", lambda s: s.images.edit(model=sdk_cases.GPT_IMAGE, prompt="night", image=IMAGE,
                                                  stream=True, partial_images=1),
     lambda r: [e.type for e in r] == ["image_edit.partial_image", "image_edit.completed"]),
    ("edits", lambda s: s.post("/edits", body={"model": sdk_cases.GPT_IMAGE, "prompt": "brighter",
                                               "images": [{"image_url": "https://example.com/cat.png"}]},
                               cast_to=ImagesResponse),
     lambda r: r.data[0].b64_json),
    ("transcription", lambda s: s.audio.transcriptions.create(model=sdk_cases.WHISPER, file=_wav("a.wav")),
     lambda r: r.text == f"Transcribed 1.00 seconds of a.wav with {sdk_cases.WHISPER}"),
    ("transcription_verbose", lambda s: s.audio.transcriptions.create(
        model=sdk_cases.WHISPER, file=_wav("v.wav"), response_format="verbose_json", timestamp_granularities=["word"]),
     lambda r: r.duration == 1.0 and r.words),
    ("transcription_stream", lambda s: s.audio.transcriptions.create(model=sdk_cases.TRANSCRIBE, file=_wav("s.wav"),
                                                                     stream=True),
     lambda r: r[-1].type == "transcript.text.done"),
    ("translation", lambda s: s.audio.translations.create(model=sdk_cases.WHISPER, file=_wav("t.wav")),
     lambda r: r.text.startswith("Translated 1.00 seconds of t.wav")),
    ("translation_text", lambda s: s.audio.translations.create(model=sdk_cases.WHISPER, file=_wav("p.wav"),
                                                               response_format="vtt"),
     lambda r: r.startswith("WEBVTT")),
    ("speech", lambda s: s.audio.speech.with_streaming_response.create(
        model=sdk_cases.TTS, voice="alloy", input="hello", response_format="wav"),
     lambda r: r[:4] == b"RIFF"),
    ("speech_sse", lambda s: s.audio.speech.create(model=sdk_cases.TTS_SSE, voice="coral", input="hello",
                                                   stream_format="sse"),
     lambda r: b"speech.audio.done" in r.content),
    ("rerank", lambda s: s.post("/rerank", body={"model": sdk_cases.RERANKER, "query": "organic skincare",
                                                 "documents": sdk_cases.DOCUMENTS}, cast_to=object),
     lambda r: r["results"][0]["index"] == 1),
    ("alpha_search", lambda s: s.post("/alpha/search", body={"model": sdk_cases.SEARCH, "id": "s-1", "input": "q"},
                                      cast_to=object),
     lambda r: r["output"]),
    ("subscription", lambda s: s.get("/dashboard/billing/subscription", cast_to=object),
     lambda r: r["hard_limit_usd"] == 100.0),
    ("usage_at_root", lambda s: s.get(str(s.base_url).removesuffix("/v1/") + "/dashboard/billing/usage",
                                      options={"params": {"start_date": "2026-11-01", "end_date": "2026-11-25"}},
                                      cast_to=object),
     lambda r: r["object"] == "list"),
    ("files", lambda s: s.files.list(), _refused(501, "api_not_implemented")),
    ("file_content", lambda s: s.files.content("file-1"), _refused(501, "api_not_implemented")),
    ("image_variation", lambda s: s.images.create_variation(image=IMAGE), _refused(501, "api_not_implemented")),
    ("model_delete", lambda s: s.models.delete(sdk_cases.CHAT), _refused(501, "api_not_implemented")),
    ("fine_tunes", lambda s: s.get("/fine-tunes", cast_to=object), _refused(501, "api_not_implemented")),
    ("unknown_model", lambda s: s.chat.completions.create(model="no-such-model", messages=HI),
     _refused(404, "model_not_found", "invalid_request_error")),
]
#: answers the SDK's own types refuse though OpenAI's spec allows them (the raw answers are
#: still validated): its Completion insists on a finish reason, null in all but a stream's
#: last chunk; its embedding is floats, checked before it decodes base64 (what it asks for by
#: default); its CompactedResponse types the output as output items, refusing the user
#: messages a compaction keeps
_NOT_STRICT: list[tuple[str, Callable[[Any], Any], Callable[[Any], object]]] = [
    ("completions_stream", lambda s: s.completions.create(model=sdk_cases.INSTRUCT, prompt="once", stream=True),
     lambda r: "".join(c.choices[0].text for c in r if c.choices).startswith(COMPLETION_PREFIX)),
    ("embeddings_base64", lambda s: s.embeddings.create(model=sdk_cases.EMBED, input=["a", "b"]),
     lambda r: [len(d.embedding) for d in r.data] == [16, 16]),
    ("responses_compact", lambda s: s.responses.compact(model=sdk_cases.CHAT, input="plan the launch"),
     lambda r: r.output[-1].type == "compaction"),
]


async def _settle_async(value: Any) -> Any:
    if inspect.isawaitable(value):
        value = await value
    if isinstance(value, openai.AsyncStream):
        return [event async for event in value]
    if hasattr(value, "__aenter__"):  # a with_streaming_response call
        async with value as response:
            return b"".join([chunk async for chunk in response.iter_bytes()])
    return value


def _settle_sync(value: Any) -> Any:
    if isinstance(value, openai.Stream):
        return list(value)
    if hasattr(value, "__enter__"):  # a with_streaming_response call
        with value as response:
            return b"".join(response.iter_bytes())
    return value


def _expect(check: Callable[[Any], object], got: Any, what: str) -> None:
    try:
        passed = check(got)
    except Exception as exc:  # an error answered instead, say: shown with what came back
        raise AssertionError(f"{what}: {got!r}") from exc
    assert passed, f"{what}: {got!r}"


async def _every_openai_endpoint(base: str, key: str) -> None:
    """The official Python SDK, async and sync, on every endpoint of the OpenAI family through
    the gateway installed with the core and this one plugin: strict response validation on
    (but where the SDK's own types refuse what OpenAI's spec allows: :data:`_NOT_STRICT`), and
    every raw answer, streams included, held to the spec by the recorder."""
    recorder = Recorder()

    def clients(strict: bool) -> tuple[openai.AsyncOpenAI, openai.OpenAI]:
        shared = {"base_url": base + "/v1", "api_key": key, "max_retries": 0, "_strict_response_validation": strict}
        return (openai.AsyncOpenAI(**shared, http_client=httpx.AsyncClient(transport=recorder.async_transport())),
                openai.OpenAI(**shared, http_client=httpx.Client(transport=recorder.transport())))

    def call_sync(call: Callable[[Any], Any], sdk: openai.OpenAI) -> Any:
        try:
            return _settle_sync(call(sdk))
        except openai.APIStatusError as error:
            return error

    (strict_async, strict_sync), (lenient_async, lenient_sync) = clients(True), clients(False)
    try:
        for calls, async_sdk, sync_sdk in ((_CALLS, strict_async, strict_sync),
                                           (_NOT_STRICT, lenient_async, lenient_sync)):
            for label, call, check in calls:
                try:
                    got = await _settle_async(call(async_sdk))
                except openai.APIStatusError as error:
                    got = error
                _expect(check, got, f"{label} (async)")
                got = await asyncio.to_thread(call_sync, call, sync_sdk)  # off the loop the fakes run on
                _expect(check, got, f"{label} (sync)")
                try:
                    recorder.check()
                except Exception as exc:
                    raise AssertionError(f"{label}: {exc}") from exc
    finally:
        for client in (strict_async, lenient_async):
            await client.close()
        for sync_client in (strict_sync, lenient_sync):
            sync_client.close()


def test_every_distributed_package_is_typed() -> None:
    """Each package of the repository's distributions carries a ``py.typed`` marker."""
    packages = [p for p in ROOT.glob("**/src/*/__init__.py") if ".venv" not in p.parts]
    assert len(packages) >= 6
    untyped = [str(p.parent.relative_to(ROOT)) for p in packages if not (p.parent / "py.typed").exists()]
    assert untyped == []


#: run in the installed environment: the plugin loads through its entry point and counts with
#: tiktoken while every socket refuses to connect (the vocabularies ship in a package)
TOKENIZER_CHECK = """
import json, socket

def refuse(*args, **kwargs):
    raise OSError("no network here")

socket.socket.connect = socket.getaddrinfo = socket.create_connection = refuse
from faregate.gateway import Gateway
from faregate.plugins import load_plugins
import faregate_tokenizer_tiktoken

plugins = load_plugins()
report = {r.name: r for r in plugins.reports}["faregate-tokenizer-tiktoken"]
gateway = Gateway(plugins, {"data_dir": "data"})
faregate_tokenizer_tiktoken.preload()
print(json.dumps({"error": report.error, "hooks": report.hooks,
                  "counts": [gateway.tokenizer(m).count("hello world") for m in ("gpt-4o", "gpt-4")],
                  "claude": gateway.tokenizer("claude-3-5-haiku-latest") is None}))
"""


def test_the_tokenizer_plugin_installs_beside_the_core_and_counts_offline(tmp_path):
    uv = _uv()
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run([uv, "pip", "install", "-q", "--python", python, "./core", "./plugins/tokenizers/tiktoken"],
                   cwd=ROOT, check=True, timeout=600)
    site = next((venv / "lib").glob("python*/site-packages"))
    assert (site / "faregate_tokenizer_tiktoken" / "py.typed").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAREGATE_", "TIKTOKEN", "DATA_GYM"))}
    env["TMPDIR"] = str(tmp_path)  # no tiktoken download cache to fall back on
    done = subprocess.run([python, "-c", TOKENIZER_CHECK], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got == {"error": None, "hooks": ["register_settings", "register_token_counters", "startup"],
                   "counts": [2, 2], "claude": True}
