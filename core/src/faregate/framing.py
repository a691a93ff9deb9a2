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
from collections.abc import Iterator, Mapping
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
        buf = self._buf
        buf += chunk
        if b"\r" in buf:
            yield from self._split_any_line_ends()
        else:  # LF only, the common case: one search per event
            start = 0
            while True:
                end = buf.find(b"\n\n", start)
                if end < 0:
                    break
                raw = bytes(buf[start:end + 2])
                start = end + 2
                parsed = parse_sse_event(raw)
                if parsed is not None:
                    yield raw, parsed[0], parsed[1]
            if start:
                del buf[:start]
        if len(buf) > self._max:
            raise FramingError("stream event larger than the limit")

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
    """Binary ``application/vnd.amazon.eventstream`` messages, decoded (CRCs checked) by
    botocore's own parser; ``event`` is the ``:event-type`` header, ``raw`` the payload
    (no client speaks this framing, so nothing forwards it byte for byte). botocore
    comes with the adapters that need it."""

    def __init__(self) -> None:
        from botocore.eventstream import EventStreamBuffer

        self._buffer = EventStreamBuffer()

    def feed(self, chunk: bytes) -> Iterator[Event]:
        from botocore.eventstream import ParserError

        self._buffer.add_data(chunk)
        try:
            for message in self._buffer:
                # botocore-stubs declare ``headers`` an int; botocore sets the parsed headers dict
                headers: Mapping[str, object] = message.headers  # type: ignore[assignment]
                name = headers.get(":event-type") or headers.get(":exception-type")
                yield message.payload, str(name) if name is not None else None, message.payload
        except ParserError as exc:
            raise FramingError(f"bad AWS event-stream message: {type(exc).__name__}") from None


# ---- whole messages (WebSocket) ----------------------------------------------------------


class MessageSplitter:
    """Each fed chunk is one complete event (a WebSocket transport delivers messages
    whole)."""

    def feed(self, chunk: bytes) -> Iterator[Event]:
        if chunk:
            yield chunk, None, chunk
