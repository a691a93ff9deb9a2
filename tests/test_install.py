"""``pip install ./core ./plugins/adapters/openai`` alone is a working gateway that
speaks the OpenAI format and nothing else (a fresh virtual environment, real wheels)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from faregate.testing.harness import free_port

ROOT = Path(__file__).resolve().parents[1]


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not os.path.exists(found):
        pytest.skip("uv is not installed")
    return found


def test_core_and_openai_adapter_alone(tmp_path):
    uv = _uv()
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run([uv, "pip", "install", "-q", "--python", python, "./core", "./plugins/adapters/openai"],
                   cwd=ROOT, check=True, timeout=600)
    listed = subprocess.run([uv, "pip", "list", "--python", python], capture_output=True, text=True,
                            check=True).stdout
    assert "faregate-adapter-openai" in listed and "faregate-adapter-anthropic" not in listed
    # typed packages (PEP 561): type checkers read the installed code's annotations
    site = next((venv / "lib").glob("python*/site-packages"))
    assert (site / "faregate" / "py.typed").exists() and (site / "faregate_adapter_openai" / "py.typed").exists()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAREGATE_")}
    env["FAREGATE_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.Popen([str(venv / "bin" / "faregate"), "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                status = httpx.get(base + "/api/status", timeout=2)
                if status.status_code == 200:
                    break
            assert proc.poll() is None and time.time() < deadline, "the installed gateway did not start"
            time.sleep(0.2)
        assert status.json()["data"]["formats"] == ["openai.chat", "openai.responses"]
        chat = httpx.post(base + "/v1/chat/completions", json={"model": "m", "messages": []})
        assert chat.status_code == 401 and chat.json()["error"]["code"] == "invalid_api_key"
        assert httpx.post(base + "/v1/messages", json={}).status_code == 404
    finally:
        proc.terminate()
        proc.wait(30)


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
    assert got == {"error": None, "hooks": ["register_token_counters", "startup"], "counts": [2, 2], "claude": True}
