"""The core's AWS event-stream splitter (``application/vnd.amazon.eventstream``, Bedrock's
streams), decoded with the standard library: every header value type AWS defines, messages
however the bytes arrive, checksums and bounds checked (botocore's own parser is checked
against the same frames in the Bedrock plugin's tests)."""

from __future__ import annotations

import struct
import uuid
import zlib

import pytest

from faregate.framing import MAX_AWS_PAYLOAD, Framing, FramingError, splitter_for


def header(name: str, kind: int, value: bytes = b"") -> bytes:
    return bytes([len(name)]) + name.encode() + bytes([kind]) + value


def string(name: str, text: str) -> bytes:
    raw = text.encode()
    return header(name, 7, struct.pack(">H", len(raw)) + raw)


def message(headers: bytes, payload: bytes) -> bytes:
    prelude = struct.pack(">II", 12 + len(headers) + len(payload) + 4, len(headers))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


EVERY_TYPE = b"".join([
    header("t", 0), header("f", 1), header("b", 2, struct.pack(">b", -3)), header("s", 3, struct.pack(">h", 300)),
    header("i", 4, struct.pack(">i", -70000)), header("l", 5, struct.pack(">q", 2**40)),
    header("raw", 6, struct.pack(">H", 3) + b"\x00\x01\x02"), header("ts", 8, struct.pack(">q", 1_700_000_000_000)),
    header("id", 9, uuid.UUID(int=7).bytes), string(":message-type", "event"), string(":event-type", "chunk"),
])


def split(data: bytes, size: int) -> list[tuple[bytes, str | None, bytes]]:
    splitter = splitter_for(Framing.AWS_EVENT_STREAM)
    return [event for i in range(0, len(data), size) for event in splitter.feed(data[i:i + size])]


def test_messages_with_every_header_type_however_they_arrive() -> None:
    stream = message(EVERY_TYPE, b'{"bytes": "eyJ9"}') + message(string(":exception-type", "throttlingException"),
                                                                  b'{"message": "slow down"}')
    for size in (1, 5, 13, len(stream)):
        assert split(stream, size) == [(b'{"bytes": "eyJ9"}', "chunk", b'{"bytes": "eyJ9"}'),
                                       (b'{"message": "slow down"}', "throttlingException",
                                        b'{"message": "slow down"}')], size
    assert split(message(string(":message-type", "event"), b""), 4) == [(b"", None, b"")]  # no event name


@pytest.mark.parametrize("where", [4, 20, -6, -1])  # the prelude's lengths, a header, the payload, the checksum
def test_a_corrupted_message_is_refused(where: int) -> None:
    frame = bytearray(message(EVERY_TYPE, b'{"a": 1}'))
    frame[where] ^= 0x40
    with pytest.raises(FramingError):
        split(bytes(frame), len(frame))


def test_lengths_out_of_bounds_and_unreadable_headers_are_refused() -> None:
    prelude = struct.pack(">II", MAX_AWS_PAYLOAD + 100, 0)
    with pytest.raises(FramingError, match="out of bounds"):  # refused before it is buffered
        list(splitter_for(Framing.AWS_EVENT_STREAM).feed(prelude + struct.pack(">I", zlib.crc32(prelude))))
    for bad in (header("x", 42), header("x", 7, struct.pack(">H", 50) + b"short"), bytes([9]) + b"\xff\xfe"):
        with pytest.raises(FramingError, match="headers"):
            split(message(bad, b"{}"), 1)
