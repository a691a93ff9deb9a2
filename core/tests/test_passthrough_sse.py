"""A same-format SSE stream: the client gets each forwarded event's bytes as they came,
in one piece when a read's events all go unchanged (the read's own bytes when it holds
whole events), held events and comment blocks left out, and a malformed event ends the
stream before anything of its read is sent."""

from __future__ import annotations

import pytest

from faregate.contracts import PassthroughStream
from faregate.errors import GatewayError
from faregate.exchange.streaming import StreamReader
from faregate.framing import Framing


class Filter(PassthroughStream):
    def feed(self, event: str | None, data: bytes) -> bool | bytes:
        if data == b"usage":  # the usage-only chunk the client did not ask for
            return False
        if data == b"bad":  # an event the filter reads as malformed
            self.error = GatewayError(502, "upstream sent a malformed stream event", code="bad_response_body")
            return False
        if data == b"shape":  # an event of the wrong shape
            raise KeyError("choices")
        if data == b"wrap":
            return b"<wrap>"
        self.done = data == b"[DONE]"
        return True


def sent(*chunks: bytes) -> bytes:
    reader = StreamReader(Filter(), None, Framing.SSE)
    return b"".join(b"".join(reader.feed(chunk, None)) for chunk in chunks)


A, B, USAGE, DONE = b"data: a\n\n", b"event: delta\ndata: b\n\n", b"data: usage\n\n", b"data: [DONE]\n\n"


def test_a_read_of_events_all_forwarded_goes_as_the_read_itself() -> None:
    chunk = A + B + DONE
    out = StreamReader(Filter(), None, Framing.SSE).feed(chunk, None)
    assert out == [chunk] and out[0] is chunk  # no copy per event, no join


@pytest.mark.parametrize(("chunks", "expected"), [
    ((A + B + DONE,), A + B + DONE),
    ((A + USAGE + DONE,), A + DONE),  # the unrequested usage chunk held back
    ((A + b": keep-alive\n\n" + B,), A + B),  # comment blocks are not forwarded
    ((A + b"data: wrap\n\n" + B,), A + b"<wrap>" + B),
    ((A + b"data: par", b"tial\n\n" + B, b"data: x\r\n\r\n"), A + b"data: partial\n\n" + B + b"data: x\r\n\r\n"),
    ((b"data: a\r\n\r\n" + A,), b"data: a\r\n\r\n" + A),
    ((A + B + b"data: unfinished",), A + B),
])
def test_the_client_gets_the_forwarded_events_bytes_as_they_came(chunks: tuple[bytes, ...], expected: bytes) -> None:
    assert sent(*chunks) == expected


@pytest.mark.parametrize("bad", [b"data: bad\n\n", b"data: shape\n\n"])
def test_a_malformed_event_mid_read_ends_the_stream_before_any_of_the_read_is_sent(bad: bytes) -> None:
    reader = StreamReader(Filter(), None, Framing.SSE)
    assert reader.feed(A, None) == [A]
    with pytest.raises(GatewayError) as caught:
        reader.feed(B + bad + DONE, None)
    assert caught.value.code == "bad_response_body"
    assert not reader.done  # the events after it were not read
