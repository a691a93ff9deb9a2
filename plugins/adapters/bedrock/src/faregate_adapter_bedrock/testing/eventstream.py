"""Writing AWS event-stream messages (``application/vnd.amazon.eventstream``), as Bedrock's
streaming APIs send them: a prelude (total length, headers length, their CRC32), string
headers (``:event-type`` or ``:exception-type``, ``:content-type``, ``:message-type``), the
JSON payload, and the CRC32 of all that. botocore's parser reads them back (the tests
prove it)."""

from __future__ import annotations

import secrets
import struct
import zlib
from typing import Any

import orjson

_STRING = 7  # the header value type of a string


def _headers(headers: dict[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        out += bytes([len(raw_name)]) + raw_name + bytes([_STRING]) + struct.pack(">H", len(raw_value)) + raw_value
    return bytes(out)


def message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message."""
    head = _headers(headers)
    prelude = struct.pack(">II", 12 + len(head) + len(payload) + 4, len(head))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + head + payload
    return body + struct.pack(">I", zlib.crc32(body))


def _padded(payload: dict[str, Any]) -> bytes:
    # Bedrock pads payloads with a field "p" of random length, against length side channels
    return orjson.dumps({**payload, "p": "abcdefghijklmnopqrstuvwxyz"[:1 + secrets.randbelow(26)]})


def event(event_type: str, payload: dict[str, Any]) -> bytes:
    return message({":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
                   _padded(payload))


def exception(exception_type: str, text: str) -> bytes:
    return message({":exception-type": exception_type, ":content-type": "application/json",
                    ":message-type": "exception"}, orjson.dumps({"message": text}))
