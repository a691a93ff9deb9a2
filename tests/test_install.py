"""``pip install ./core ./plugins/adapters/openai`` alone is a working gateway that
speaks the OpenAI format and nothing else (a fresh virtual environment, real wheels)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
import wave
from pathlib import Path
from typing import Any

import httpx
import pytest

from faregate.testing.harness import free_port

ROOT = Path(__file__).resolve().parents[1]


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not os.path.exists(found):
        pytest.skip("uv is not installed")
    return found


async def test_core_and_openai_adapter_alone(tmp_path: Path, fake_openai: Any) -> None:
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
        await _every_openai_endpoint(base, fake_openai)
    finally:
        proc.terminate()
        await asyncio.to_thread(proc.wait, 30)


async def _every_openai_endpoint(base: str, fake_openai: Any) -> None:
    """The official SDK (strict response validation) on each endpoint family of the OpenAI
    family, through the gateway installed with the core and this one plugin."""
    import openai

    from faregate.testing.harness import AdminClient

    admin = AdminClient(base)
    try:
        await admin.setup_root()
        await admin.set_option("ModelRatio", {"gpt-3.5-turbo-instruct": 0.75})
        await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o-mini,gpt-3.5-turbo-instruct,"
                                "text-embedding-3-small,omni-moderation-latest,dall-e-3,gpt-image-1,whisper-1,tts-1")
        key = await admin.add_token(remain_quota=50_000_000)
    finally:
        await admin.close()
    sdk = openai.AsyncOpenAI(base_url=base + "/v1", api_key=key, max_retries=0, _strict_response_validation=True)
    try:
        chunks = [c async for c in await sdk.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True)]
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert (await sdk.completions.create(model="gpt-3.5-turbo-instruct", prompt="once")).choices[0].text
        # float: in strict mode the SDK validates its default base64 answer as floats before decoding it
        # (as it would a real OpenAI answer); the base64 path is covered by test_relay_embeddings.py
        embedded = await sdk.embeddings.create(model="text-embedding-3-small", input="x", encoding_format="float")
        assert len(embedded.data) == 1
        assert (await sdk.moderations.create(model="omni-moderation-latest", input="x")).results
        assert (await sdk.images.generate(model="dall-e-3", prompt="a cat")).data
        png = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
               b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\xdac\xfc\xcf\xc0P\x0f\x00\x04\x85\x01\x80\x84\xa9"
               b"\x8c!\x00\x00\x00\x00IEND\xaeB`\x82")
        assert (await sdk.images.edit(model="gpt-image-1", prompt="blue", image=("in.png", png, "image/png"))).data
        wav = _silent_wav(seconds=1)
        text = (await sdk.audio.transcriptions.create(model="whisper-1", file=("a.wav", wav, "audio/wav"))).text
        assert text.startswith("Transcribed")
        speech = await sdk.audio.speech.create(model="tts-1", voice="alloy", input="hello", response_format="wav")
        assert (await speech.aread())[:4] == b"RIFF"
        response = await sdk.responses.create(model="gpt-4o-mini", input="hello")
        assert response.output_text and response.status == "completed"
        async with sdk.responses.stream(model="gpt-4o-mini", input="stream") as stream:
            async for _ in stream:
                pass
            assert (await stream.get_final_response()).output_text
    finally:
        await sdk.close()


def _silent_wav(seconds: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16_000)
        out.writeframes(b"\x00\x00" * 16_000 * seconds)
    return buffer.getvalue()


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
