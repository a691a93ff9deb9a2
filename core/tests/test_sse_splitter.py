"""The SSE splitter: events end at an empty line whatever the line ends (LF, CRLF as Gemini
sends them, lone CR), however the bytes are chunked (a CRLF split across two reads is
still one line end), and each event's ``raw`` is its bytes as they came, so a same-format
stream is forwarded byte for byte."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from faregate.framing import SSESplitter

LINE = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), max_size=12)
EVENTS = st.lists(st.tuples(st.sampled_from([None, "message", "delta"]), st.lists(LINE, min_size=1, max_size=3)),
                  min_size=1, max_size=6)


def encode(events: list[tuple[str | None, list[str]]], ends: list[str]) -> bytes:
    out = []
    for i, (name, lines) in enumerate(events):
        end = ends[i % len(ends)]
        head = f"event: {name}{end}" if name else ""
        out.append(head + "".join(f"data: {line}{end}" for line in lines) + end)
    return "".join(out).encode()


@settings(max_examples=200, deadline=None)
@given(events=EVENTS, ends=st.lists(st.sampled_from(["\n", "\r\n"]), min_size=1, max_size=3),
       cuts=st.lists(st.integers(1, 7), max_size=40))
def test_events_and_their_bytes_survive_any_chunking(events: list[tuple[str | None, list[str]]], ends: list[str],
                                                     cuts: list[int]) -> None:
    wire = encode(events, ends)
    splitter = SSESplitter()
    found = []
    start = 0
    for size in [*cuts, len(wire)]:
        found += list(splitter.feed(wire[start:start + size]))
        start += size
    assert b"".join(raw for raw, _, _ in found) == wire  # byte for byte, CRLF included
    assert [(name, data.decode()) for _, name, data in found] == [
        (name, "\n".join(lines)) for name, lines in events]


def test_a_lone_cr_ends_a_line_once_the_next_byte_shows_it_is_no_crlf() -> None:
    splitter = SSESplitter()
    assert list(splitter.feed(b"data: a\r\r")) == []  # the last CR may yet be half of a CRLF
    assert list(splitter.feed(b"data: b\n\n")) == [(b"data: a\r\r", None, b"a"), (b"data: b\n\n", None, b"b")]
