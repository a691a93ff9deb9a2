"""Incremental Server-Sent Events splitting that keeps each event's raw bytes, so a
same-format stream can be forwarded byte for byte while it is read on the side."""

from __future__ import annotations

from collections.abc import Iterator

MAX_EVENT_BYTES = 64 * 1024 * 1024


class SSEError(Exception):
    pass


class SSESplitter:
    def __init__(self, max_event: int = MAX_EVENT_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_event

    def feed(self, chunk: bytes) -> Iterator[tuple[bytes, str | None, bytes]]:
        """Yield ``(raw, event_name, data)`` for each complete event in the input."""
        buf = self._buf
        buf += chunk
        if b"\r" in chunk:
            # normalise CRLF (and lone CR) line ends once, before splitting
            normalised = bytes(buf).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            buf[:] = normalised
        start = 0
        while True:
            end = buf.find(b"\n\n", start)
            if end < 0:
                break
            raw = bytes(buf[start:end + 2])
            start = end + 2
            parsed = parse_event(raw)
            if parsed is not None:
                yield raw, parsed[0], parsed[1]
        if start:
            del buf[:start]
        if len(buf) > self._max:
            raise SSEError("stream event larger than the limit")

    def tail(self) -> bytes:
        return bytes(self._buf)


def parse_event(raw: bytes) -> tuple[str | None, bytes] | None:
    """Return (event name, data) or None for a comment-only/empty block."""
    event: str | None = None
    data: list[bytes] = []
    for line in raw.split(b"\n"):
        if not line or line[0] == 58:  # ':' comment (keep-alive)
            continue
        field, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            data.append(value)
        elif field == b"event":
            event = value.decode("utf-8", "replace")
    if not data and event is None:
        return None
    return event, b"\n".join(data)


def sse_bytes(data: bytes, event: str | None = None) -> bytes:
    if event is None:
        return b"data: " + data + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"
