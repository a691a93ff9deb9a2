"""What the images and audio of an OpenAI request count, by OpenAI's documented rules,
read from the media's own headers (no URL is fetched).

- **Images** (OpenAI's vision guide, the GPT-4o / 4.1 / 4.5 family's rule): ``detail: low``
  is 85 tokens whatever the size; ``high`` and ``auto`` are 85 plus 170 per 512-pixel
  tile of the image scaled to fit a 2048 x 2048 square, then its shorter side down to 768
  (a smaller image is not enlarged). The size is read from a data URI's header; an image
  given by URL, or one whose header cannot be read, counts the estimator's flat allowance.
- **Audio** (``input_audio`` parts, base64 WAV or MP3): 10 tokens a second, OpenAI's rate
  for user audio (one token per 100 ms), the duration read from the file's header; when it
  cannot be read, the size taken for 128 kbit/s.

Every read is bounded: only the ranges a header parser asks for are decoded from the
base64 text (:class:`Base64File`), within :data:`HEADER_BUDGET` bytes, so a 100 MB data URI
costs what its header costs.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any

import imagesize  # type: ignore[import-untyped]  # no py.typed: (int, int) per its docs
import mutagen.mp3
import mutagen.wave

from faregate.api import estimator

#: ``detail: low``, and the base of every other detail
IMAGE_BASE_TOKENS = 85
#: per 512 x 512 tile at ``high`` / ``auto`` detail
IMAGE_TILE_TOKENS = 170
IMAGE_TILE = 512
#: the square an image is first scaled to fit, and the shorter side it is then brought to
IMAGE_FIT = 2048
IMAGE_SHORT_SIDE = 768
#: user audio: one token per 100 ms
AUDIO_TOKENS_PER_SECOND = 10
#: an audio part whose duration cannot be read: its size taken for 128 kbit/s
AUDIO_GUESS_BYTES_PER_SECOND = 16_000
#: no header may claim more than a second per kilobyte (8 kbit/s, below any usual rate)
AUDIO_MIN_BYTES_PER_SECOND = 1_000
#: the most of one data URI a header parser may have decoded (with a floor per read, so a
#: header of a million tiny reads is refused as well)
HEADER_BUDGET = 256 * 1024
READ_FLOOR = 64


class HeaderTooLong(OSError):
    """A parser wanted more of the file than a header should take."""


class Base64File:
    """A read-only, seekable binary file over base64 text (from ``start`` on: a data URI is
    read where its payload begins, never copied) that decodes only the ranges read, within
    a budget: what header parsers such as ``imagesize`` and ``mutagen`` need of a file.
    Raises ``ValueError`` on text that is not padded base64."""

    def __init__(self, text: str, start: int = 0, budget: int = HEADER_BUDGET) -> None:
        if (len(text) - start) % 4:
            raise ValueError("not padded base64")
        self._text = text
        self._start = start
        self.size = decoded_size(text, start)
        self._pos = 0
        self._budget = budget
        self.name = "<data>"

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, self.size)[whence]
        if base + offset < 0:
            raise OSError("seek before the start")
        self._pos = base + offset
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        start = self._pos
        end = self.size if size is None or size < 0 else min(self.size, start + size)
        if end <= start:
            return b""
        self._budget -= max(end - start, READ_FLOOR)
        if self._budget < 0:
            raise HeaderTooLong("the header reader went past its budget")
        first = start // 3  # base64 quantum: 4 characters, 3 bytes
        data = base64.b64decode(self._text[self._start + first * 4:self._start - (-end // 3) * 4], validate=True)
        skip = start - first * 3
        out = data[skip:skip + end - start]
        self._pos = start + len(out)
        return out


def decoded_size(text: str, start: int = 0) -> int:
    """The bytes base64 ``text`` (from ``start`` on) decodes to, without decoding it."""
    return (len(text) - start) // 4 * 3 - (2 if text.endswith("==") else 1 if text.endswith("=") else 0)


def data_uri_payload(url: str) -> int | None:
    """Where the base64 text of a ``data:…;base64,`` URI begins, else None."""
    if not url.startswith("data:"):
        return None
    comma = url.find(",", 0, 256)
    if comma < 0 or not url.endswith(";base64", 0, comma):
        return None
    return comma + 1


def tile_tokens(width: int, height: int) -> int:
    """``high`` / ``auto`` detail tokens of a ``width`` x ``height`` image."""
    fit = min(1.0, IMAGE_FIT / max(width, height))
    width, height = max(1, round(width * fit)), max(1, round(height * fit))
    short = min(1.0, IMAGE_SHORT_SIDE / min(width, height))
    width, height = max(1, round(width * short)), max(1, round(height * short))
    tiles = math.ceil(width / IMAGE_TILE) * math.ceil(height / IMAGE_TILE)
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * tiles


def image_size(text: str, start: int = 0) -> tuple[int, int] | None:
    """Width and height from the header of a base64 image (``text`` from ``start`` on):
    PNG, JPEG, GIF, WebP …"""
    try:
        width, height = imagesize.get(Base64File(text, start), exif_rotation=False)
    except Exception:  # whatever a hostile header makes a parser raise: size unknown
        return None
    if not isinstance(width, int) or not isinstance(height, int) or width <= 0 or height <= 0:
        return None
    return width, height


def image_tokens(image_url: Any) -> int:
    """Tokens of a chat ``image_url`` part's value (``{"url", "detail"}``, or a bare URL)."""
    url, detail = (image_url.get("url"), image_url.get("detail")) if isinstance(image_url, dict) else (image_url, None)
    if detail == "low":
        return IMAGE_BASE_TOKENS
    start = data_uri_payload(url) if isinstance(url, str) else None
    size = image_size(url, start) if isinstance(url, str) and start is not None else None
    return tile_tokens(*size) if size is not None else estimator.IMAGE_TOKENS


def audio_seconds(payload: str, fmt: str) -> float | None:
    """The duration of base64 WAV or MP3 audio from its header; None when unknown."""
    # mutagen's constructors are untyped: called through Callable[..., Any]
    reader: Callable[..., Any] | None = {"wav": mutagen.wave.WAVE, "mp3": mutagen.mp3.MP3}.get(fmt)
    if reader is None:
        return None
    try:
        source = Base64File(payload)
        length = float(reader(source).info.length)
    except Exception:  # whatever a hostile header makes mutagen raise: duration unknown
        return None
    if not math.isfinite(length) or length < 0:
        return None
    return min(length, source.size / AUDIO_MIN_BYTES_PER_SECOND)


def audio_tokens(input_audio: Any) -> int:
    """Tokens of a chat ``input_audio`` part's value (``{"data", "format"}``)."""
    if not isinstance(input_audio, dict) or not isinstance(input_audio.get("data"), str):
        return estimator.IMAGE_TOKENS
    payload: str = input_audio["data"]
    fmt = input_audio.get("format")
    seconds = audio_seconds(payload, fmt) if isinstance(fmt, str) else None
    if seconds is None:
        seconds = max(0, decoded_size(payload)) / AUDIO_GUESS_BYTES_PER_SECOND
    return max(1, math.ceil(seconds * AUDIO_TOKENS_PER_SECOND))
