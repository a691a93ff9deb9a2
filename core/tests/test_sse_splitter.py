"""The SSE splitter: events end at an empty line whatever the line ends (LF, CRLF as Gemini
sends them, lone CR), however the bytes are chunked (a CRLF split across two reads is
still one line end), and each event's ``raw`` is its bytes as they came, so a same-format
stream is forwarded byte for byte."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faregate.framing import FramingError, SSESplitter, parse_sse_event

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


# ---- split(): the relay's batch of a read's events ---------------------------------------

#: the truth for a whole stream at once: blocks end at an empty line, whatever the line ends
_BLOCK_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")


def reference(wire: bytes) -> list[tuple[bytes, str | None, bytes]]:
    events = []
    start = 0
    for match in _BLOCK_END.finditer(wire):
        raw = wire[start:match.end()]
        start = match.end()
        parsed = parse_sse_event(raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
        if parsed is not None:
            events.append((raw, parsed[0], parsed[1]))
    return events


#: the lines of a block: data (one or more, empty too), an event name, a comment, ids
BLOCK_LINE = st.one_of(st.builds(lambda s: f"data: {s}", LINE), st.just("data:"), st.just("data: [DONE]"),
                       st.builds(lambda s: f"event: {s}", st.sampled_from(["message", "delta", ""])),
                       st.builds(lambda s: f": {s}", LINE), st.just("id: 7"), st.just("retry: 10"))
BLOCKS = st.lists(st.tuples(st.lists(BLOCK_LINE, max_size=3), st.lists(st.sampled_from(["\n", "\r\n", "\r"]),
                                                                        min_size=1, max_size=2)), max_size=8)


@settings(max_examples=400, deadline=None)
@given(blocks=BLOCKS, cuts=st.lists(st.integers(1, 300), max_size=12), lf_only=st.booleans())
def test_split_finds_the_events_of_any_stream_however_it_is_read(
        blocks: list[tuple[list[str], list[str]]], cuts: list[int], lf_only: bool) -> None:
    text = ""
    for lines, ends in blocks:
        text += "".join(line + ("\n" if lf_only else ends[j % len(ends)]) for j, line in enumerate(lines))
        text += "\n" if lf_only else ends[0]
    wire = text.encode() + b"data: last\n\n"  # a stream's last event settles a CR at a block's end
    splitter = SSESplitter()
    found = []
    start = 0
    for size in [*cuts, len(wire)]:
        chunk = wire[start:start + size]
        start += size
        events, whole = splitter.split(chunk)
        splitter.check()
        if whole is not None:  # the events' bytes in one piece: exactly theirs, end to end
            assert events and whole == b"".join(raw for raw, _, _ in events)
        found += events
    assert found == reference(wire)
    fed = SSESplitter()
    assert [ev for i in range(0, len(wire), 5) for ev in fed.feed(wire[i:i + 5])] == found


def test_a_read_of_whole_single_line_events_is_forwarded_as_the_read_itself() -> None:
    chunk = b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n'
    events, whole = SSESplitter().split(chunk)
    assert whole is chunk and [data for _, _, data in events] == [b'{"a":1}', b'{"b":2}', b"[DONE]"]
    splitter = SSESplitter()
    events, whole = splitter.split(chunk + b"data: {\"c")  # an unfinished event waits for the next read
    assert whole == chunk and len(events) == 3
    assert splitter.split(b'":3}\n\n') == ([(b'data: {"c":3}\n\n', None, b'{"c":3}')], None)


def test_a_comment_block_is_no_event_and_breaks_the_one_piece() -> None:
    chunk = b"data: a\n\n: keep-alive\n\ndata: b\n\n"
    events, whole = SSESplitter().split(chunk)
    assert whole is None and [raw for raw, _, _ in events] == [b"data: a\n\n", b"data: b\n\n"]
    named = b"event: delta\ndata: x\ndata: y\n\n"
    assert SSESplitter().split(named) == ([(named, "delta", b"x\ny")], named)


def test_an_event_over_the_limit_fails_after_the_events_before_it() -> None:
    splitter = SSESplitter(max_event=8)
    events, _ = splitter.split(b"data: a\n\ndata: 0123456789")
    assert [data for _, _, data in events] == [b"a"]
    with pytest.raises(FramingError):
        splitter.check()
    fed = SSESplitter(max_event=8).feed(b"data: a\n\ndata: 0123456789")
    assert next(fed) == (b"data: a\n\n", None, b"a")
    with pytest.raises(FramingError):
        next(fed)
