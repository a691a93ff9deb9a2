"""An answer's head goes out with its body in one write (a short stream's chunked end too),
and with what came of the body so far when the loop turns first, so a client never waits
longer for the head or the first bytes than before."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import h11
import pytest
from hypercorn.asyncio.worker_context import WorkerContext
from hypercorn.config import Config
from hypercorn.events import Event, RawData
from hypercorn.protocol.events import Body, EndBody, Response
from hypercorn.typing import ConnectionState
from hypothesis import given, settings
from hypothesis import strategies as st

from faregate.edge.h11_writes import CoalescingH11Protocol, FramedConnection, response_head, server_headers


class _Protocol:
    def __init__(self, send: Any = None) -> None:
        self.writes: list[bytes] = []
        self.protocol = CoalescingH11Protocol(
            None,  # type: ignore[arg-type]  # the app: not reached, the events are sent directly
            Config(),
            WorkerContext(None),
            None,  # type: ignore[arg-type]  # the task group: not reached either
            ConnectionState({}),
            False,
            ("127.0.0.1", 5000),
            ("127.0.0.1", 8000),
            send or self._send,
        )
        self.protocol.connection.receive_data(b"POST /v1/chat HTTP/1.1\r\nHost: gw\r\nContent-Length: 0\r\n\r\n")
        self.protocol.connection.next_event()  # the request
        self.protocol.connection.next_event()  # its (empty) end

    async def _send(self, event: Event) -> None:
        if isinstance(event, RawData):
            self.writes.append(event.data)

    async def respond(self, headers: list[tuple[bytes, bytes]]) -> None:
        await self.protocol.stream_send(Response(stream_id=1, headers=headers, status_code=200))


async def test_a_regular_answer_is_one_write() -> None:
    conn = _Protocol()
    await conn.respond([(b"content-length", b"11"), (b"x-request-id", b"r1")])
    await conn.protocol.stream_send(Body(stream_id=1, data=b'{"ok":true}'))
    await conn.protocol.stream_send(EndBody(stream_id=1))
    assert len(conn.writes) == 1
    head, _, body = conn.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and b"x-request-id: r1" in head
    assert body == b'{"ok":true}'


async def test_an_answer_without_a_body_is_one_write() -> None:
    conn = _Protocol()
    await conn.respond([(b"content-length", b"0")])
    await conn.protocol.stream_send(EndBody(stream_id=1))
    assert len(conn.writes) == 1 and conn.writes[0].startswith(b"HTTP/1.1 200 ")


async def test_a_streams_head_goes_with_its_first_bytes_when_the_loop_turns() -> None:
    conn = _Protocol()
    await conn.respond([(b"content-type", b"text/event-stream")])  # no length: chunked
    await conn.protocol.stream_send(Body(stream_id=1, data=b"data: 1\n\n"))
    assert conn.writes == []  # the end may still come in this turn
    for _ in range(3):
        await asyncio.sleep(0)
    assert len(conn.writes) == 1 and conn.writes[0].endswith(b"\r\n\r\n9\r\ndata: 1\n\n\r\n")
    await conn.protocol.stream_send(Body(stream_id=1, data=b"data: 2\n\n"))
    await conn.protocol.stream_send(EndBody(stream_id=1))
    assert conn.writes[1:] == [b"9\r\ndata: 2\n\n\r\n", b"0\r\n\r\n"]  # chunked, as Hypercorn frames it


async def test_a_short_stream_and_its_end_are_one_write() -> None:
    """A stream whose whole body is its last chunk (faregate.contracts.inbound.LastChunk)."""
    conn = _Protocol()
    await conn.respond([(b"content-type", b"text/event-stream")])
    await conn.protocol.stream_send(Body(stream_id=1, data=b"data: 1\n\n"))
    await conn.protocol.stream_send(EndBody(stream_id=1))
    assert len(conn.writes) == 1 and conn.writes[0].endswith(b"\r\n\r\n9\r\ndata: 1\n\n\r\n0\r\n\r\n")


class _Server:
    """Hypercorn's asyncio server as the protocol sees it: ``protocol_send`` and its ``writer``."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.sent: list[Event] = []

    async def protocol_send(self, event: Event) -> None:
        self.sent.append(event)
        if isinstance(event, RawData):
            self.writer.write(event.data)
            await self.writer.drain()


async def test_the_turns_write_goes_to_the_transport_in_order() -> None:
    """When the loop turns, what is held is written on the connection's writer at once (no
    task), after what an earlier answer wrote."""
    ours, theirs = socket.socketpair()
    _, writer = await asyncio.open_connection(sock=ours)
    server = _Server(writer)
    conn = _Protocol(server.protocol_send)
    writer.write(b"EARLIER;")  # an earlier answer's last bytes, its drain not awaited
    await conn.respond([(b"content-type", b"text/event-stream")])
    await conn.protocol.stream_send(Body(stream_id=1, data=b"data: 1\n\n"))
    tasks = len(asyncio.all_tasks())
    asyncio.get_running_loop().call_soon(lambda: server.sent.append(RawData(data=b"mark")))
    await asyncio.sleep(0)
    assert len(asyncio.all_tasks()) == tasks and [e.data for e in server.sent] == [b"mark"]  # type: ignore[attr-defined]
    await conn.protocol.stream_send(EndBody(stream_id=1))
    await asyncio.sleep(0.05)
    theirs.setblocking(False)
    received = theirs.recv(65536)
    assert received.startswith(b"EARLIER;HTTP/1.1 200 ") and received.endswith(b"9\r\ndata: 1\n\n\r\n0\r\n\r\n")
    writer.close()
    theirs.close()


async def test_a_held_head_goes_out_when_the_body_does_not_follow_at_once() -> None:
    conn = _Protocol()
    await conn.respond([(b"content-length", b"4")])  # a file whose bytes are read first, a stream awaiting its first
    assert conn.writes == []  # held while the body may still follow in this turn of the loop
    for _ in range(3):  # the loop turns: the head goes alone
        await asyncio.sleep(0)
    assert len(conn.writes) == 1 and conn.writes[0].startswith(b"HTTP/1.1 200 ")
    await conn.protocol.stream_send(Body(stream_id=1, data=b"abcd"))
    await conn.protocol.stream_send(EndBody(stream_id=1))
    assert conn.writes[1:] == [b"abcd"]


HEADS = [
    [(b"content-type", b"application/json"), (b"content-length", b"2"), (b"x-request-id", b"r1")],
    [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), (b"x-a", b"")],
    [(b"x-odd", b"a  b\tc"), (b"x-latin", "café".encode("latin-1")), (b"content-length", b"0")],
]


@pytest.mark.parametrize("headers", HEADS)
def test_a_checked_head_is_the_head_h11_makes(headers: list[tuple[bytes, bytes]]) -> None:
    ours, theirs = response_head(headers, 200), h11.Response(headers=headers, status_code=200)
    assert list(ours.headers.raw_items()) == list(theirs.headers.raw_items())
    assert ours.status_code == theirs.status_code and ours.reason == theirs.reason


@pytest.mark.parametrize("name, value", [
    (b"x-a", b"one\r\nset-cookie: injected=1"), (b"x-a", b"one\ntwo"), (b"x-a", b"nul\x00"), (b"x-a", b"ff\x0c"),
    (b"x a", b"v"), (b"x-a:", b"v"), (b"x-\xe9", b"v"),
])
def test_a_bad_header_line_is_refused_as_h11_refuses_it(name: bytes, value: bytes) -> None:
    """A header line an app sends is checked before it is written: a line break in a value
    (a response splitting attempt) or a name that is not a token never reaches the client."""
    headers = [(b"content-type", b"text/plain"), (name, value)]
    with pytest.raises(h11.LocalProtocolError):
        h11.Response(headers=headers, status_code=200)
    with pytest.raises(h11.LocalProtocolError):
        response_head(headers, 200)


def test_the_servers_own_lines_are_hypercorns_made_once_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    config = Config()
    now = [1_800_000_000.2]
    monkeypatch.setattr("time.time", lambda: now[0])
    monkeypatch.setattr("hypercorn.config.time", lambda: now[0])
    first = server_headers(config)
    assert first == config.response_headers("h11") and (b"date", b"Fri, 15 Jan 2027 08:00:00 GMT") in first
    now[0] += 0.5
    assert server_headers(config) is first  # the same second: made once
    now[0] += 1
    later = server_headers(config)
    assert later is not first and (b"date", b"Fri, 15 Jan 2027 08:00:01 GMT") in later
    other = Config()
    other.include_server_header = False
    assert server_headers(other) == other.response_headers("h11")  # another server's config: its own lines


_LINES = st.lists(st.sampled_from([
    (b"Content-Type", b"text/event-stream"), (b"content-length", b"12"), (b"Content-Length", b"0"),
    (b"transfer-encoding", b"chunked"), (b"Transfer-Encoding", b"Chunked"), (b"connection", b"keep-alive"),
    (b"Connection", b"close"), (b"X-Request-Id", b"r1"), (b"cache-control", b"no-cache"), (b"x-a", b""),
]), max_size=6, unique_by=lambda line: line[0].lower())


def _answered(connection: h11.Connection, request: bytes, status: int, headers: list[tuple[bytes, bytes]]) -> Any:
    connection.receive_data(request)
    while connection.next_event() not in (h11.NEED_DATA, h11.PAUSED) and connection.their_state is not h11.DONE:
        pass
    sent: list[Any] = []
    for event in (h11.Response(status_code=status, headers=headers), h11.Data(data=b"abc"), h11.EndOfMessage()):
        try:
            sent.append(connection.send(event))
        except h11.LocalProtocolError as exc:
            sent.append(f"refused: {exc}")
            break
    return sent, connection.our_state, connection._cstate.keep_alive


@settings(max_examples=300, deadline=None)
@given(method=st.sampled_from([b"GET", b"HEAD", b"POST", b"CONNECT"]), version=st.sampled_from([b"1.0", b"1.1"]),
       close=st.booleans(), status=st.sampled_from([200, 204, 304, 404]), headers=_LINES)
def test_the_framed_head_is_the_head_h11_sends(method: bytes, version: bytes, close: bool, status: int,
                                               headers: list[tuple[bytes, bytes]]) -> None:
    """FramedConnection sets an answer's framing lines without checking every line again:
    for every request (HEAD, CONNECT, HTTP/1.0, Connection: close) and answer (no length, a
    length, chunked, no body) the bytes sent and the state after are h11's own."""
    target = b"gw:443" if method == b"CONNECT" else b"/v1"
    request = (method + b" " + target + b" HTTP/" + version + b"\r\nHost: gw\r\n"
               + (b"Connection: close\r\n" if close else b"") + b"\r\n")
    theirs = _answered(h11.Connection(h11.SERVER), request, status, headers)
    ours = _answered(FramedConnection(h11.SERVER), request, status, headers)
    assert ours == theirs


def test_hypercorns_connection_is_the_framed_one() -> None:
    assert type(_Protocol().protocol.connection) is FramedConnection
