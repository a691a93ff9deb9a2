"""How upstreams frame a streamed body, and incremental splitters for each framing.

A splitter takes bytes as they arrive and yields ``(raw, event, data)`` per complete
event: ``raw`` is the event's own bytes (what a same-format stream forwards byte for
byte), ``event`` its name where the framing has one, ``data`` the payload a stream
parser reads. Providers declare their framing (``Provider.stream_framing``); the
core picks the splitter.
"""

from __future__ import annotations

import enum
import re
import struct
import zlib
from collections.abc import Iterator
from typing import Protocol

MAX_EVENT_BYTES = 64 * 1024 * 1024

Event = tuple[bytes, str | None, bytes]


class Framing(enum.Enum):
    SSE = "sse"  # text/event-stream (OpenAI, Anthropic, Gemini ?alt=sse)
    JSON_ARRAY = "json_array"  # one JSON array, elements streamed (Gemini without alt=sse)
    JSON_LINES = "json_lines"  # newline-delimited JSON (Ollama, Cohere)
    AWS_EVENT_STREAM = "aws_event_stream"  # application/vnd.amazon.eventstream (Bedrock)
    WEBSOCKET = "websocket"  # one event per WebSocket message (realtime)


class FramingError(Exception):
    """The upstream's stream does not follow its framing (or an event is too large)."""


class Splitter(Protocol):
    def feed(self, chunk: bytes) -> Iterator[Event]: ...


def splitter_for(framing: Framing, max_event: int = MAX_EVENT_BYTES) -> Splitter:
    if framing is Framing.SSE:
        return SSESplitter(max_event)
    if framing is Framing.JSON_ARRAY:
        return JSONArraySplitter(max_event)
    if framing is Framing.JSON_LINES:
        return JSONLinesSplitter(max_event)
    if framing is Framing.AWS_EVENT_STREAM:
        return AWSEventStreamSplitter()
    return MessageSplitter()


# ---- Server-Sent Events ------------------------------------------------------------------


#: the end of an event: two line ends, each CRLF, a lone CR or LF (a CR before LF is CRLF)
_LINE_END = rb"(?:\r\n|\r(?!\n)|\n)"
_EVENT_END = re.compile(_LINE_END + _LINE_END)


class SSESplitter:
    """Events end at an empty line. ``raw`` is the event's bytes as they came (CRLF too:
    Gemini's events end in ``\r\n\r\n``), so a same-format stream is forwarded byte for
    byte; only the parse sees the line ends normalised."""

    def __init__(self, max_event: int = MAX_EVENT_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_event

    def feed(self, chunk: bytes) -> Iterator[Event]:
        yield from self.split(chunk)[0]
        self.check()

    def split(self, chunk: bytes) -> tuple[list[Event], bytes | None]:
        """``feed``'s events as one list (no generator per read on the relay's hot path),
        with their bytes in one piece when they lie end to end in ``chunk`` (nothing carried
        over from the last read, no comment block among them), else None: what a stream
        that forwards each of them unchanged sends. Call :meth:`check` once they are
        handled (``feed`` raises after its events too)."""
        if self._buf or b"\r" in chunk:
            return self._split_buffered(chunk), None
        # the common case: LF-framed events, cut from the read's own bytes in one call
        parts = chunk.split(b"\n\n")
        rest = parts.pop()  # an unfinished event, or b""
        cut = len(chunk) - len(rest)
        if rest:
            self._buf += rest
        if not parts:
            return [], None
        if (chunk.startswith(b"data: ") and chunk.count(b"\n", 0, cut) == 2 * len(parts)
                and chunk.count(b"\n\ndata: ", 0, cut) == len(parts) - 1):
            # every event one data line (every line end is an event's end, and each event
            # starts with "data: "): most streams, what the parse would give
            return [(part + b"\n\n", None, part[6:]) for part in parts], chunk[:cut] if rest else chunk
        events: list[Event] = []
        whole = True
        for part in parts:
            raw = part + b"\n\n"
            if part.startswith(b"data: ") and b"\n" not in part:
                events.append((raw, None, part[6:]))
                continue
            parsed = parse_sse_event(raw)
            if parsed is None:
                whole = False  # a comment block: not forwarded
            else:
                events.append((raw, parsed[0], parsed[1]))
        return events, (chunk[:cut] if rest else chunk) if whole and events else None

    def check(self) -> None:
        """Raise :class:`FramingError` when the unfinished event is over the limit."""
        if len(self._buf) > self._max:
            raise FramingError("stream event larger than the limit")

    def _split_buffered(self, chunk: bytes) -> list[Event]:
        buf = self._buf
        buf += chunk
        if b"\r" in buf:
            return list(self._split_any_line_ends())
        events: list[Event] = []  # LF only: one search per event
        start = 0
        while True:
            end = buf.find(b"\n\n", start)
            if end < 0:
                break
            raw = bytes(buf[start:end + 2])
            start = end + 2
            if raw.startswith(b"data: ") and raw.find(b"\n", 6) == len(raw) - 2:
                events.append((raw, None, raw[6:-2]))  # one data line, most events: what the parse would give
                continue
            parsed = parse_sse_event(raw)
            if parsed is not None:
                events.append((raw, parsed[0], parsed[1]))
        if start:
            del buf[:start]
        return events

    def _split_any_line_ends(self) -> Iterator[Event]:
        buf = self._buf
        start = 0
        for match in _EVENT_END.finditer(buf):
            end = match.end()
            if end == len(buf) and buf[-1] == 0x0D:
                break  # a CR at the very end may be half of a CRLF: wait for the next byte
            raw = bytes(buf[start:end])
            start = end
            parsed = parse_sse_event(raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
            if parsed is not None:
                yield raw, parsed[0], parsed[1]
        if start:
            del buf[:start]


def parse_sse_event(raw: bytes) -> tuple[str | None, bytes] | None:
    """Return (event name, data) or None for a comment-only/empty block."""
    event: str | None = None
    data: list[bytes] = []
    for line in raw.split(b"\n"):
        if not line or line[0] == 58:  # ':' comment (keep-alive)
            continue
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            data.append(value)
        elif name == b"event":
            event = value.decode("utf-8", "replace")
    if not data and event is None:
        return None
    return event, b"\n".join(data)


def sse_bytes(data: bytes, event: str | None = None) -> bytes:
    if event is None:
        return b"data: " + data + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"


# ---- one JSON array, streamed ------------------------------------------------------------

_QUOTE, _BACKSLASH = 34, 92


class JSONArraySplitter:
    """Finds the elements (objects or arrays) of a top-level JSON array as they complete
    (orjson parses each one; this only tracks nesting outside strings to find where an
    element ends). The
    separators before an element travel in its ``raw``; the closing ``]`` comes as a
    last event named ``end`` with no data."""

    def __init__(self, max_event: int = MAX_EVENT_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_event
        self._pos = 0  # scan position in _buf
        self._depth = 0  # 0: between elements (inside the array), -1: before the array
        self._in_string = False
        self._escaped = False
        self._element_start = -1
        self._started = False
        self._ended = False

    def feed(self, chunk: bytes) -> Iterator[Event]:
        buf = self._buf
        buf += chunk
        i = self._pos
        cut = 0  # bytes of buf already handed out
        while i < len(buf):
            c = buf[i]
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif c == _BACKSLASH:
                    self._escaped = True
                elif c == _QUOTE:
                    self._in_string = False
            elif not self._started:
                if c == 0x5B:  # '['
                    self._started = True
                elif c not in b" \t\r\n":
                    raise FramingError("stream is not a JSON array")
            elif self._ended:
                if c not in b" \t\r\n":
                    raise FramingError("data after the end of the JSON array")
            elif c == _QUOTE:
                self._in_string = True
            elif c in b"{[":
                if self._depth == 0:
                    self._element_start = i
                self._depth += 1
            elif c in b"}]":
                if self._depth == 0:
                    if c == 0x5D:  # the array's own ']'
                        self._ended = True
                        yield bytes(buf[cut:i + 1]), "end", b""
                        cut = i + 1
                    else:
                        raise FramingError("unbalanced JSON array stream")
                else:
                    self._depth -= 1
                    if self._depth == 0:
                        yield bytes(buf[cut:i + 1]), None, bytes(buf[self._element_start:i + 1])
                        cut = i + 1
                        self._element_start = -1
            i += 1
        if cut:
            del buf[:cut]
            i -= cut
            if self._element_start >= 0:
                self._element_start -= cut
        self._pos = i
        if len(buf) > self._max:
            raise FramingError("stream element larger than the limit")


# ---- newline-delimited JSON --------------------------------------------------------------


class JSONLinesSplitter:
    def __init__(self, max_event: int = MAX_EVENT_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_event

    def feed(self, chunk: bytes) -> Iterator[Event]:
        buf = self._buf
        buf += chunk
        start = 0
        while True:
            end = buf.find(b"\n", start)
            if end < 0:
                break
            raw = bytes(buf[start:end + 1])
            start = end + 1
            line = raw.strip()
            if line:
                yield raw, None, line
        if start:
            del buf[:start]
        if len(buf) > self._max:
            raise FramingError("stream line larger than the limit")


# ---- AWS event-stream --------------------------------------------------------------------


class AWSEventStreamSplitter:
    """Binary ``application/vnd.amazon.eventstream`` messages (AWS's documented framing: a
    prelude of the total and headers lengths and their CRC32, typed headers, the payload,
    the CRC32 of the whole), decoded with the standard library, both checksums checked;
    ``event`` is the ``:event-type`` header (``:exception-type`` for an error),
    ``raw`` the payload (no client speaks this framing, so nothing forwards it byte for
    byte). A message over botocore's own bounds (128 KiB of headers, 16 MiB of payload) is
    refused before it is buffered."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> Iterator[Event]:
        buf = self._buf
        buf += chunk
        start = 0
        while len(buf) - start >= _AWS_PRELUDE.size:
            total, headers_length, prelude_crc = _AWS_PRELUDE.unpack_from(buf, start)
            if zlib.crc32(buf[start:start + 8]) != prelude_crc:
                raise FramingError("bad AWS event-stream message: its prelude checksum does not match")
            if headers_length > MAX_AWS_HEADERS or total < _AWS_OVERHEAD + headers_length \
                    or total - headers_length - _AWS_OVERHEAD > MAX_AWS_PAYLOAD:
                raise FramingError("bad AWS event-stream message: its lengths are out of bounds")
            if len(buf) - start < total:
                break
            end = start + total
            (message_crc,) = _AWS_CRC.unpack_from(buf, end - 4)
            if zlib.crc32(buf[start:end - 4]) != message_crc:
                raise FramingError("bad AWS event-stream message: its checksum does not match")
            first = start + _AWS_PRELUDE.size
            headers = _aws_headers(bytes(buf[first:first + headers_length]))
            payload = bytes(buf[first + headers_length:end - 4])
            start = end
            name = headers.get(":event-type") or headers.get(":exception-type")
            yield payload, str(name) if name is not None else None, payload
        if start:
            del buf[:start]


#: the prelude (total length, headers length, their CRC32) and the message's CRC32, big-endian
_AWS_PRELUDE = struct.Struct(">III")
_AWS_CRC = struct.Struct(">I")
_AWS_OVERHEAD = _AWS_PRELUDE.size + _AWS_CRC.size
MAX_AWS_HEADERS = 128 * 1024
MAX_AWS_PAYLOAD = 16 * 1024 * 1024
#: header value types of a fixed size: true, false (no bytes), byte, short, integer, long,
#: timestamp (milliseconds), UUID
_AWS_FIXED: dict[int, struct.Struct | None] = {0: None, 1: None, 2: struct.Struct(">b"), 3: struct.Struct(">h"),
                                               4: struct.Struct(">i"), 5: struct.Struct(">q"),
                                               8: struct.Struct(">q")}
_AWS_BYTES, _AWS_STRING, _AWS_UUID = 6, 7, 9


def _aws_headers(data: bytes) -> dict[str, object]:
    """A message's headers: each a name (1-byte length), a type, and its value."""
    headers: dict[str, object] = {}
    i = 0
    try:
        while i < len(data):
            size = data[i]
            name = data[i + 1:i + 1 + size].decode()
            kind = data[i + 1 + size]
            i += 2 + size
            value: object
            if kind in _AWS_FIXED:
                shape = _AWS_FIXED[kind]
                if shape is None:
                    value = kind == 0
                else:
                    (value,) = shape.unpack_from(data, i)
                    i += shape.size
            elif kind in (_AWS_BYTES, _AWS_STRING):
                (length,) = struct.unpack_from(">H", data, i)
                raw = data[i + 2:i + 2 + length]
                if len(raw) != length:
                    raise ValueError("a header value past the headers")
                value = raw.decode() if kind == _AWS_STRING else raw
                i += 2 + length
            elif kind == _AWS_UUID and i + 16 <= len(data):
                value = data[i:i + 16]
                i += 16
            else:
                raise ValueError("an unknown header value type")
            headers[name] = value
    except (IndexError, ValueError, struct.error):  # incl. UnicodeDecodeError
        raise FramingError("bad AWS event-stream message: its headers cannot be read") from None
    return headers


# ---- whole messages (WebSocket) ----------------------------------------------------------


class MessageSplitter:
    """Each fed chunk is one complete event (a WebSocket transport delivers messages
    whole)."""

    def feed(self, chunk: bytes) -> Iterator[Event]:
        if chunk:
            yield chunk, None, chunk
