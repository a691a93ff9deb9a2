"""Images and audio in chat requests, counted by OpenAI's rules from their own headers:
image sizes (PNG, JPEG, GIF, WebP built here byte by byte), the tile rule on the vision
guide's worked examples, audio durations (WAV from the stdlib, MP3 frames by hand), and
the bounds: a 100 MB data URI costs what its header costs."""

from __future__ import annotations

import base64
import io
import struct
import time
import wave
import zlib

import pytest

from faregate.api import estimator
from faregate_adapter_openai import media_tokens as mt
from faregate_adapter_openai.format import prompt_tokens


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 16))
            + chunk(b"IEND", b""))


def jpeg(width: int, height: int, app_bytes: int = 1000) -> bytes:
    """SOI, an APP1 segment of ``app_bytes`` (EXIF-sized), the SOF0 with the size, EOI."""
    app1 = b"\xff\xe1" + struct.pack(">H", app_bytes + 2) + b"\0" * app_bytes
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return b"\xff\xd8" + app1 + sof0 + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\0\0\0;"


def webp(width: int, height: int) -> bytes:
    body = b"VP8X" + struct.pack("<I", 10) + b"\0\0\0\0" + (width - 1).to_bytes(3, "little") \
        + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


def data_uri(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64," + base64.b64encode(data).decode()


def wav(seconds: float, rate: int = 16_000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\0\0" * int(rate * seconds))
    return out.getvalue()


#: one MPEG-1 Layer III frame, 128 kbit/s, 44.1 kHz, no padding: 417 bytes, 1152 samples
MP3_FRAME = b"\xff\xfb\x90\x64" + b"\0" * (417 - 4)


# ---- images ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "width", "height"), [
    (png, 1024, 1024), (jpeg, 2048, 4096), (gif, 256, 256), (webp, 4096, 8192), (png, 1, 70_000)])
def test_image_sizes_are_read_from_the_header(make, width, height) -> None:
    uri = data_uri(make(width, height))
    start = mt.data_uri_payload(uri)
    assert start is not None
    assert mt.image_size(uri, start) == (width, height)


@pytest.mark.parametrize(("width", "height", "tokens"), [
    (1024, 1024, 765),  # the guide: no fit needed, scaled to 768 x 768, 4 tiles
    (2048, 4096, 1105),  # the guide: fit to 1024 x 2048, then 768 x 1536, 6 tiles
    (512, 512, 255),  # one tile: a small image is not enlarged
    (256, 256, 255),
    (4096, 1024, 85 + 170 * 4),  # fit to 2048 x 512 (short side already under 768): 4 x 1 tiles
    (1000, 700, 85 + 170 * 4),  # short side 700: not enlarged, 2 x 2 tiles
    (1600, 1200, 85 + 170 * 4),  # short side down to 768: 1024 x 768, 2 x 2 tiles
    (3000, 1000, 85 + 170 * 8),  # fit to 2048 x 683: 4 x 2 tiles
])
def test_the_tile_rule(width, height, tokens) -> None:
    assert mt.tile_tokens(width, height) == tokens


def test_detail_and_sources() -> None:
    uri = data_uri(jpeg(2048, 4096))
    assert mt.image_tokens({"url": uri}) == 1105
    assert mt.image_tokens({"url": uri, "detail": "auto"}) == 1105
    assert mt.image_tokens({"url": uri, "detail": "high"}) == 1105
    assert mt.image_tokens({"url": uri, "detail": "low"}) == 85
    assert mt.image_tokens(uri) == 1105  # a bare URL string
    # no size to read: a URL (never fetched), a header that is no image, not base64
    assert mt.image_tokens({"url": "https://example.com/cat.png"}) == estimator.IMAGE_TOKENS
    assert mt.image_tokens({"url": "https://example.com/cat.png", "detail": "low"}) == 85
    assert mt.image_tokens({"url": data_uri(b"not an image at all")}) == estimator.IMAGE_TOKENS
    assert mt.image_tokens({"url": "data:image/png;base64,%%%%not-base64"}) == estimator.IMAGE_TOKENS
    assert mt.image_tokens({"url": "data:image/svg+xml,<svg/>"}) == estimator.IMAGE_TOKENS
    assert mt.image_tokens({"url": None}) == estimator.IMAGE_TOKENS


def test_a_huge_data_uri_costs_what_its_header_costs() -> None:
    """100 MB of image: the header is found at once; the payload is never decoded (nor copied)."""
    uri = data_uri(png(800, 600) + b"\0" * (75 << 20))
    started = time.perf_counter()
    assert mt.image_tokens({"url": uri}) == mt.tile_tokens(800, 600)
    assert time.perf_counter() - started < 0.05


def test_header_reads_are_budgeted() -> None:
    """A JPEG's size behind half a megabyte of segments is still found (the parser seeks past
    them, decoding nothing); a parser that reads past the budget, in one read or in many
    tiny ones, is stopped."""
    segments = b"".join(b"\xff\xe2" + struct.pack(">H", 65_000) + b"\0" * 64_998 for _ in range(8))
    far = b"\xff\xd8" + segments + jpeg(640, 480)[2:]
    assert mt.image_tokens({"url": data_uri(far, "image/jpeg")}) == mt.tile_tokens(640, 480)
    payload = base64.b64encode(far).decode()
    with pytest.raises(mt.HeaderTooLong):
        mt.Base64File(payload).read(mt.HEADER_BUDGET + 1)
    tiny = mt.Base64File(payload)
    with pytest.raises(mt.HeaderTooLong):
        for _ in range(mt.HEADER_BUDGET // mt.READ_FLOOR + 1):
            tiny.read(1)


def test_base64_file_reads_any_range() -> None:
    data = bytes(range(256)) * 40 + b"tail"
    for start in (0, 1, 2, 3, 100, len(data) - 5):
        source = mt.Base64File(base64.b64encode(data).decode())
        assert source.size == len(data)
        source.seek(start)
        assert source.read(7) == data[start:start + 7]
        assert source.tell() == min(len(data), start + 7)
    source = mt.Base64File(base64.b64encode(data).decode())
    assert source.seek(-4, 2) == len(data) - 4 and source.read() == b"tail"
    with pytest.raises(ValueError):
        mt.Base64File("abc")  # not padded


# ---- audio ----------------------------------------------------------------------------------


def test_wav_and_mp3_durations() -> None:
    assert mt.audio_seconds(base64.b64encode(wav(3.0)).decode(), "wav") == pytest.approx(3.0)
    assert mt.audio_tokens({"data": base64.b64encode(wav(3.0)).decode(), "format": "wav"}) == 30
    mp3 = base64.b64encode(MP3_FRAME * 100).decode()
    assert mt.audio_seconds(mp3, "mp3") == pytest.approx(100 * 1152 / 44_100, rel=0.02)
    assert mt.audio_tokens({"data": mp3, "format": "mp3"}) == pytest.approx(26, abs=1)


def test_audio_that_cannot_be_read_is_guessed_from_its_size() -> None:
    payload = base64.b64encode(b"\x01" * 32_000).decode()  # 32 KB: two seconds at 128 kbit/s
    assert mt.audio_tokens({"data": payload, "format": "wav"}) == 20
    assert mt.audio_tokens({"data": payload, "format": "flac"}) == 20  # not a format chat takes
    assert mt.audio_tokens({"format": "wav"}) == estimator.IMAGE_TOKENS  # no data at all


def test_a_forged_duration_is_capped_by_the_size() -> None:
    """A WAV header claiming a byte rate of 1 byte/s for 64 KB of data: at most a second a KB."""
    data = bytearray(wav(2.0))
    struct.pack_into("<I", data, 28, 1)  # byte rate
    struct.pack_into("<H", data, 32, 1)  # block align
    struct.pack_into("<I", data, 24, 1)  # sample rate
    seconds = mt.audio_seconds(base64.b64encode(bytes(data)).decode(), "wav")
    assert seconds is None or seconds <= len(data) / mt.AUDIO_MIN_BYTES_PER_SECOND


def test_a_huge_audio_part_is_bounded() -> None:
    payload = base64.b64encode(MP3_FRAME * 200_000).decode()  # 83 MB
    started = time.perf_counter()
    seconds = mt.audio_seconds(payload, "mp3")
    assert time.perf_counter() - started < 0.1
    assert seconds == pytest.approx(200_000 * 1152 / 44_100, rel=0.02)


# ---- in the chat format's estimate ----------------------------------------------------------


def test_prompt_tokens_count_images_and_audio() -> None:
    text = {"type": "text", "text": "what is in this picture and this recording?"}
    image = {"type": "image_url", "image_url": {"url": data_uri(png(1024, 1024))}}
    audio = {"type": "input_audio", "input_audio": {"data": base64.b64encode(wav(4.0)).decode(), "format": "wav"}}
    file = {"type": "file", "file": {"file_id": "file-1"}}
    only_text = prompt_tokens({"messages": [{"role": "user", "content": [text]}]})
    both = prompt_tokens({"messages": [{"role": "user", "content": [text, image, audio, file]}]})
    assert both == only_text + 765 + 40 + estimator.IMAGE_TOKENS


# ---- in the Responses and moderation estimates (the same rules as chat) ----------------------


def test_responses_input_counts_images_and_audio_as_chat_does() -> None:
    from faregate_adapter_openai.responses_api.summary import read_input

    text = {"type": "input_text", "text": "what is in this picture and this recording?"}
    uri = data_uri(png(1024, 1024))
    audio = {"data": base64.b64encode(wav(4.0)).decode(), "format": "wav"}

    def tokens(*parts: dict[str, object]) -> int:
        return read_input([{"role": "user", "content": [text, *parts]}])[0]

    only_text = tokens()
    assert tokens({"type": "input_image", "image_url": uri, "detail": "auto"}) == only_text + 765
    assert tokens({"type": "input_image", "image_url": uri, "detail": "low"}) == only_text + 85
    assert tokens({"type": "input_audio", "input_audio": audio}) == only_text + 40
    # nothing to read a size from: a URL (never fetched), a file_id; files as chat counts them
    for flat in ({"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "auto"},
                 {"type": "input_image", "file_id": "file-1", "detail": "high"},
                 {"type": "input_file", "file_id": "file-1"}):
        assert tokens(flat) == only_text + estimator.IMAGE_TOKENS
    # a tool's output may carry an image too
    output = read_input([{"type": "function_call_output", "call_id": "c1", "output": [
        {"type": "input_image", "image_url": uri, "detail": "high"}]}])[0]
    assert output == 765 + estimator.MESSAGE_OVERHEAD


def test_moderation_images_count_by_the_tile_rule() -> None:
    from faregate.testing.inbound import inbound_request
    from faregate_adapter_openai.endpoints import summarize_moderation

    text = {"type": "text", "text": "is this fine?"}
    image = {"type": "image_url", "image_url": {"url": data_uri(png(512, 512))}}
    request = inbound_request(path="/v1/moderations", kind="moderations")
    only_text = summarize_moderation({"input": [text]}, request).prompt_tokens
    assert summarize_moderation({"input": [text, image]}, request).prompt_tokens == only_text + 255
    by_url = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    assert summarize_moderation({"input": [by_url]}, request).prompt_tokens == estimator.IMAGE_TOKENS
