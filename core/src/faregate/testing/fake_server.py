"""The base of every fake vendor server: a real HTTP/1.1 server on a loopback port, for
tests and load benchmarks.

A vendor's fake (``FakeOpenAI``, ``FakeAnthropic``, a plugin's own) subclasses
:class:`FakeServer` and implements one method, :meth:`FakeServer.answer`, which answers a
parsed :class:`Request` through a :class:`Response`; it renders its vendor's error shape
in :meth:`FakeServer.error_body`. Everything else is shared::

    class FakeShout(FakeServer):
        def error_body(self, status: int, message: str | None = None) -> bytes:
            return json.dumps({"oops": message or "error"}).encode()

        async def answer(self, request: Request, response: Response) -> None:
            if request.path != "/shout":
                return response.send(404, self.error_body(404, "no route"))
            text = str(request.json["text"]).upper()
            await response.reply(200, json.dumps({"text": text}).encode())

    async with FakeShout(key="k") as fake:
        ...                                   # point a channel at fake.base_url
        fake.fail_next(429, "slow down")      # the next request gets the vendor's 429
        fake.requests[-1]["json"]             # what the gateway sent

What the base does:

* lifecycle: :meth:`~FakeServer.start` / :meth:`~FakeServer.stop` or ``async with``, a
  free loopback port by default (``base_url``);
* HTTP/1.1 requests with keep-alive and pipelining, ``Content-Length`` or chunked bodies
  (at most :attr:`~FakeServer.max_body` bytes), ``Expect: 100-continue``; HTTP/1.0 too;
* :attr:`~FakeServer.requests`: every request as a dict (``method``, ``path``, ``query``
  (a dict), ``headers`` (lower-case names), ``json`` (parsed, or None), ``body`` (bytes)),
  the last :attr:`~FakeServer.max_recorded` of them;
* faults, one per request, from the queue :attr:`~FakeServer.faults`
  (:meth:`~FakeServer.push_fault`, :meth:`~FakeServer.fail_next`) or from the request
  headers ``x-fake-fault: <kind>`` [+ ``x-fake-status``, ``x-fake-delay``,
  ``x-fake-after-chunks``, ``x-fake-retry-after``], which take precedence over the queue.
  The vendor-neutral kinds (a fake may add its own, see :class:`Fault`):

  ``status``           reply ``status`` with the vendor's error body (+ ``Retry-After``)
  ``slow_first_byte``  sleep ``delay`` before answering, then answer normally
  ``stream_cut``       a stream: ``after_chunks`` frames then close (no terminating chunk);
                       a whole body: half of it then close
  ``stall``            a stream: ``after_chunks`` frames, sleep ``delay``, the rest;
                       a whole body: half of it, sleep ``delay``, the rest
  ``malformed_json``   200 ``application/json`` with a truncated JSON body
  ``reset``            TCP RST (SO_LINGER 0) before answering
  ``hang``             never answer (until ``stop()``)

  ``stream_cut`` and ``stall`` act where the fake answers with :meth:`Response.reply` or
  :meth:`Response.stream`; its error answers (:meth:`Response.send`) are never cut;
* response helpers on :class:`Response`: the head, whole bodies, streams of frames
  (chunked, or close-delimited for HTTP/1.0), closing and resetting the connection;
* WebSocket upgrades: :attr:`Response.reader` is the connection's reader, for
  :func:`faregate.testing.fake_websocket.upgrade` (a vendor's realtime API).

It is plain ``asyncio`` streams with no task per request, cheap enough to be the
upstream of a load benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import socket
import struct
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, ClassVar, Self
from urllib.parse import parse_qsl

import orjson

__all__ = [
    "FAULT_KINDS",
    "HTML",
    "JSON",
    "SSE",
    "BadRequest",
    "FakeServer",
    "Fault",
    "Headers",
    "Request",
    "Response",
]

#: the fault kinds every fake understands
FAULT_KINDS = frozenset({"status", "slow_first_byte", "stream_cut", "stall", "malformed_json", "reset", "hang"})
#: the kinds that act while the answer is written (by ``Response.reply`` / ``Response.stream``)
WRITE_FAULTS = frozenset({"stream_cut", "stall"})

JSON = b"application/json"
SSE = b"text/event-stream; charset=utf-8"
HTML = b"text/html; charset=UTF-8"

#: extra response headers: ``(name, value)`` pairs of bytes
Headers = Iterable[tuple[bytes, bytes]]

_PHRASES = {
    520: "Unknown Error",
    521: "Web Server Is Down",
    522: "Connection Timed Out",
    523: "Origin Is Unreachable",
    524: "A Timeout Occurred",
    529: "Overloaded",
}
_STATUS_LINES: dict[int, bytes] = {}
_DATE: list[Any] = [0, b""]  # (second, formatted) of the last Date header


def status_line(status: int) -> bytes:
    line = _STATUS_LINES.get(status)
    if line is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = _PHRASES.get(status, "Unknown")
        line = _STATUS_LINES[status] = f"HTTP/1.1 {status} {phrase}\r\n".encode()
    return line


def http_date() -> bytes:
    now = int(time.time())
    if _DATE[0] != now:
        _DATE[0] = now
        _DATE[1] = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now)).encode()
    date: bytes = _DATE[1]
    return date


def chunk(data: bytes) -> bytes:
    """``data`` as one HTTP/1.1 chunk."""
    return b"%x\r\n%b\r\n" % (len(data), data)


@dataclass
class Fault:
    """One injected fault (see the module docstring for the kinds).

    A fake with kinds of its own subclasses this, widens :attr:`kinds` and sets its
    :attr:`FakeServer.fault_type`; any fake also takes a plain :class:`Fault`.
    """

    kind: str
    status: int = 500
    retry_after: str | None = None
    delay: float = 0.0
    #: how many frames of a stream go out before ``stream_cut`` / ``stall`` act
    after_chunks: int = 2
    #: the body of a ``status`` or ``malformed_json`` answer instead of the fake's own
    body: bytes | None = None
    #: the message of a ``status`` answer's error body
    message: str | None = None

    kinds: ClassVar[frozenset[str]] = FAULT_KINDS

    def __post_init__(self) -> None:
        if self.kind not in self.kinds:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {sorted(self.kinds)}")


class BadRequest(Exception):
    """A request the server cannot parse (answered 400, then the connection closes)."""


class Request:
    """One parsed HTTP request."""

    __slots__ = ("body", "headers", "json", "keep_alive", "method", "number", "path", "query", "target", "version")

    def __init__(self, method: str, target: str, version: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.target = target
        path, sep, query = target.partition("?")
        self.path = path
        #: the query string's parameters (the last value of a repeated name)
        self.query: dict[str, str] = dict(parse_qsl(query, keep_blank_values=True)) if sep else {}
        self.version = version
        #: header names in lower case
        self.headers = headers
        self.body = body
        #: the body parsed as JSON, None when empty or not JSON
        self.json: Any = None
        if body:
            with contextlib.suppress(orjson.JSONDecodeError):
                self.json = orjson.loads(body)
        #: 1, 2, ... in the order the server received them
        self.number = 0
        conn = headers.get("connection", "").lower()
        self.keep_alive = "keep-alive" in conn if version == "HTTP/1.0" else "close" not in conn


class Response:
    """The answer to one request in progress, on the connection's writer.

    :attr:`keep_alive` says whether the connection serves another request afterwards
    (false once the fake closed or reset it, or for an HTTP/1.0 stream). :attr:`fault`
    is the request's fault, if any; :meth:`reply` and :meth:`stream` apply the
    ``stream_cut`` and ``stall`` kinds.
    """

    __slots__ = ("chunked", "fault", "keep_alive", "reader", "request", "request_id", "writer")

    def __init__(self, writer: asyncio.StreamWriter, request: Request, request_id: bytes | None,
                 reader: asyncio.StreamReader | None = None) -> None:
        self.writer = writer
        #: the connection's reader: what a WebSocket upgrade reads its frames from
        #: (:mod:`faregate.testing.fake_websocket`)
        self.reader = reader
        self.request = request
        self.keep_alive = request.keep_alive
        self.chunked = False
        self.fault: Fault | None = None
        #: the (name, value) header naming the request, if the fake sends one
        self.request_id = request_id

    # ---- building blocks --------------------------------------------------------------
    def head(self, status: int, content_type: bytes, length: int | None, extra: Headers = ()) -> bytes:
        """The status line and headers. ``length`` None starts a stream: chunked, or
        close-delimited for an HTTP/1.0 client."""
        parts = [status_line(status), b"date: ", http_date(), b"\r\ncontent-type: ", content_type, b"\r\n"]
        if self.request_id is not None:
            parts.append(self.request_id)
        for name, value in extra:
            parts += (name, b": ", value, b"\r\n")
        if length is not None:
            parts += (b"content-length: ", str(length).encode(), b"\r\n")
        elif self.request.version != "HTTP/1.0":
            self.chunked = True
            parts.append(b"transfer-encoding: chunked\r\n")
        else:
            self.keep_alive = False
        parts.append(b"connection: keep-alive\r\n\r\n" if self.keep_alive else b"connection: close\r\n\r\n")
        return b"".join(parts)

    def frame(self, data: bytes) -> bytes:
        """``data`` framed for the stream :meth:`head` started (a chunk, or as is)."""
        return chunk(data) if self.chunked else data

    def end(self) -> bytes:
        """The end of a stream (the last chunk, or nothing: closing ends it)."""
        return b"0\r\n\r\n" if self.chunked else b""

    def write(self, data: bytes) -> None:
        self.writer.write(data)

    async def drain(self) -> None:
        await self.writer.drain()

    # ---- whole answers ----------------------------------------------------------------
    def send(self, status: int, body: bytes, content_type: bytes = JSON, extra: Headers = ()) -> None:
        """Answer ``status`` with ``body``, whatever the fault (for errors)."""
        self.writer.write(self.head(status, content_type, len(body), extra) + body)

    async def reply(self, status: int, body: bytes, content_type: bytes = JSON, extra: Headers = ()) -> None:
        """Answer with ``body``, cut (``stream_cut``) or paused (``stall``) half-way when
        the request's fault says so."""
        fault = self.fault
        if fault is None or fault.kind not in WRITE_FAULTS:
            self.writer.write(self.head(status, content_type, len(body), extra) + body)
            return
        half = len(body) // 2
        self.writer.write(self.head(status, content_type, len(body), extra) + body[:half])
        await self.writer.drain()
        if fault.kind == "stream_cut":
            self.close()
            return
        await asyncio.sleep(fault.delay)
        self.writer.write(body[half:])

    async def stream(self, frames: Sequence[bytes], content_type: bytes = SSE, status: int = 200,
                     extra: Headers = ((b"cache-control", b"no-cache"),), *, pace: bool = False,
                     pause: tuple[int, float] | None = None) -> None:
        """Answer with a stream of ``frames`` (SSE events, say), each framed by
        :meth:`frame`: in one write, or with ``pace`` one frame at a time, flushed, so
        the client sees them one by one. With a ``stream_cut`` / ``stall`` fault the
        first ``fault.after_chunks`` frames go out, then the connection closes (no end
        of the stream) / the rest follows after ``fault.delay``. ``pause=(k, seconds)``
        does the same as a stall without a fault: a fake's own fault kinds use it to
        let the client see the first frames before what follows."""
        head = self.head(status, content_type, None, extra)
        fault = self.fault if self.fault is not None and self.fault.kind in WRITE_FAULTS else None
        if fault is None and not pace and pause is None:
            frame = self.frame
            self.writer.write(head + b"".join([frame(f) for f in frames]) + self.end())
            return
        k, delay = len(frames), 0.0
        if fault is not None:
            k, delay = max(0, min(fault.after_chunks, len(frames) - 1)), fault.delay
        elif pause is not None:
            k, delay = pause
        self.writer.write(head)
        await self._write_frames(frames[:k], pace)
        if fault is not None and fault.kind == "stream_cut":
            self.close()  # flushes what was written, then FIN
            return
        if k < len(frames):
            await asyncio.sleep(delay)
        await self._write_frames(frames[k:], pace)
        self.writer.write(self.end())

    async def _write_frames(self, frames: Sequence[bytes], pace: bool) -> None:
        if not pace:
            self.writer.write(b"".join([self.frame(f) for f in frames]))
            await self.writer.drain()
            return
        for f in frames:
            self.writer.write(self.frame(f))
            await self.writer.drain()
            await asyncio.sleep(0)

    # ---- the connection ---------------------------------------------------------------
    def close(self) -> None:
        """Close the connection after what was written (FIN)."""
        self.keep_alive = False
        self.writer.close()

    def reset(self) -> None:
        """Drop the connection with a TCP RST, discarding anything unsent."""
        self.keep_alive = False
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()


class FakeServer:
    """A fake vendor server. Subclasses implement :meth:`answer` and :meth:`error_body`;
    see the module docstring."""

    #: the fault class this fake takes (its own kinds, fields)
    fault_type: ClassVar[type[Fault]] = Fault
    #: the body of a ``malformed_json`` fault
    malformed_json: ClassVar[bytes] = b'{"id": "x", "choices": ['
    #: the name of the response header carrying a request id (none when None)
    request_id_header: ClassVar[bytes | None] = None
    #: the largest request body accepted
    max_body: ClassVar[int] = 64 * 1024 * 1024
    #: how many requests :attr:`requests` keeps
    max_recorded: ClassVar[int] = 1000

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, key: str | None = None,
                 latency: float = 0.0, validate_requests: bool = True) -> None:
        #: check requests against the vendor's published schema (:meth:`schema_problem`)
        self.validate_requests = validate_requests
        #: every schema violation seen: ``{"path", "error", "json"}`` a request; the plugin's
        #: fixture fails the test when one was recorded (see :func:`assert_no_violations`)
        self.violations: list[dict[str, Any]] = []
        self._checked: set[int] = set()
        self.host = host
        self.port = port
        #: the credential the fake accepts (None: any); checking it is the subclass's part
        self.key = key
        #: seconds to sleep before every answer
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        #: a random prefix for the ids the fake makes up
        self.id_prefix = secrets.token_hex(6)
        self._numbers = itertools.count(1)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping = asyncio.Event()

    # ---- the vendor's schema ---------------------------------------------------------------
    def schema_problem(self, request: Request) -> str | None:
        """Why ``request`` breaks the vendor's published request schema (None when it does
        not, or when this route is not checked). Subclasses check their routes, e.g. with
        :class:`faregate.testing.vendor_schema.VendorSpec`."""
        return None

    def load_schema(self) -> None:
        """Load what :meth:`schema_problem` checks with (a vendor's document, once per process),
        called by :meth:`start` before the fake listens: loading it on the first request made
        that request wait for it (about a second of CPU; a client's 5 s timeout ran out under
        load). Subclasses that check with a document load it here."""

    def check_request(self, request: Request) -> str | None:
        """The schema problem of ``request``, recorded in :attr:`violations` once a request
        (even when a fault answers it), so a test cannot pass over a bad upstream request."""
        if not self.validate_requests:
            return None
        error = self.schema_problem(request)
        if error is not None and request.number not in self._checked:
            self.violations.append({"path": request.path, "error": error, "json": request.json})
        self._checked.add(request.number)
        return error

    # ---- lifecycle ----------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        if self._server is not None:
            return
        if self.validate_requests:
            self.load_schema()
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(self._serve_connection, self.host, self.port, limit=1 << 20,
                                                  backlog=4096, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 5)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- faults -----------------------------------------------------------------------
    def push_fault(self, fault: Fault) -> None:
        """Queue ``fault`` for a coming request (one fault per request, first in first out)."""
        if fault.kind not in self.fault_type.kinds:
            raise ValueError(f"{type(self).__name__} has no fault kind {fault.kind!r}")
        self.faults.append(fault)

    def fail_next(self, status: int, message: str) -> None:
        """Answer the next request with ``status`` and the vendor's error body carrying
        ``message`` (a queued ``status`` fault)."""
        self.push_fault(self.fault_type("status", status=status, message=message))

    def error_body(self, status: int, message: str | None = None) -> bytes:
        """The vendor's error body for ``status`` (``message`` None: the vendor's usual
        one). Subclasses render their vendor's shape; this one is ``{"error": {...}}``."""
        if message is None:
            message = status_line(status).decode().split(" ", 2)[2].strip()
        return orjson.dumps({"error": {"status": status, "message": message}})

    def fault_body(self, fault: Fault) -> bytes:
        """The body of a ``status`` fault's answer."""
        return fault.body if fault.body is not None else self.error_body(fault.status, fault.message)

    async def answer_fault(self, request: Request, response: Response) -> bool:
        """Apply ``response.fault`` before the request is answered; True when that
        answered it. Subclasses with fault kinds of their own extend this."""
        fault = response.fault
        assert fault is not None
        kind = fault.kind
        if kind == "status":
            extra = ((b"retry-after", fault.retry_after.encode()),) if fault.retry_after is not None else ()
            response.send(fault.status, self.fault_body(fault), JSON, extra)
            return True
        if kind == "slow_first_byte":
            await asyncio.sleep(fault.delay)
            return False
        if kind == "malformed_json":
            response.send(200, fault.body if fault.body is not None else self.malformed_json)
            return True
        if kind == "reset":
            response.reset()
            return True
        if kind == "hang":
            await self._stopping.wait()
            response.reset()
            return True
        return False  # stream_cut, stall: applied while answering

    def _select_fault(self, headers: dict[str, str]) -> Fault | None:
        kind = headers.get("x-fake-fault")
        if kind:
            fault = self.fault_type(kind.strip().lower())
            if "x-fake-status" in headers:
                fault.status = int(headers["x-fake-status"])
            if "x-fake-delay" in headers:
                fault.delay = float(headers["x-fake-delay"])
            if "x-fake-after-chunks" in headers:
                fault.after_chunks = int(headers["x-fake-after-chunks"])
            if "x-fake-retry-after" in headers:
                fault.retry_after = headers["x-fake-retry-after"]
            return fault
        if self.faults:
            return self.faults.pop(0)
        return None

    # ---- answering ----------------------------------------------------------------------
    async def answer(self, request: Request, response: Response) -> None:
        """Answer ``request`` through ``response`` (the subclass's part)."""
        raise NotImplementedError

    # ---- HTTP ---------------------------------------------------------------------------
    async def _read_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Request | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        except asyncio.LimitOverrunError as exc:
            raise BadRequest("request header too large") from exc
        lines = head[:-4].decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ", 2)
        except ValueError as exc:
            raise BadRequest("malformed request line") from exc
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise BadRequest("malformed header line")
            headers[name.strip().lower()] = value.strip()
        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = await self._read_chunked(reader)
        else:
            try:
                length = int(headers.get("content-length", "0") or 0)
            except ValueError as exc:
                raise BadRequest("bad content-length") from exc
            if length < 0 or length > self.max_body:
                raise BadRequest("bad content-length")
            body = await reader.readexactly(length) if length else b""
        return Request(method, target, version, headers, body)

    async def _read_chunked(self, reader: asyncio.StreamReader) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError as exc:
                raise BadRequest("bad chunk size") from exc
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return b"".join(parts)
            total += size
            if total > self.max_body:
                raise BadRequest("body too large")
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while True:
                try:
                    request = await self._read_request(reader, writer)
                except BadRequest as exc:
                    body = self.error_body(400, str(exc))
                    writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
                                 b"content-length: %d\r\nconnection: close\r\n\r\n%b" % (len(body), body))
                    break
                if request is None:
                    break
                if not await self._respond(request, writer, reader):
                    break
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass
        except asyncio.CancelledError:
            # Only stop() cancels connections. Finish the task normally: asyncio's
            # client_connected_cb done-callback calls task.exception(), which would log
            # a spurious CancelledError for a cancelled task.
            writer.transport.abort()
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            if not writer.transport.is_closing():
                writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _record(self, request: Request) -> None:
        requests = self.requests
        if len(requests) >= self.max_recorded:
            del requests[: len(requests) - self.max_recorded + 1]
        requests.append({"method": request.method, "path": request.path, "query": request.query,
                         "headers": request.headers, "json": request.json, "body": request.body})

    async def _respond(self, request: Request, writer: asyncio.StreamWriter,
                       reader: asyncio.StreamReader | None = None) -> bool:
        """Answer one request; False when the connection must close."""
        self._record(request)
        number = request.number = next(self._numbers)
        request_id = None
        if self.request_id_header is not None:
            request_id = b"%b: req_%b%012d\r\n" % (self.request_id_header, self.id_prefix.encode(), number)
        response = Response(writer, request, request_id, reader)
        try:
            response.fault = self._select_fault(request.headers)
        except ValueError as exc:
            response.send(400, self.error_body(400, f"invalid x-fake-* header: {exc}"))
            return response.keep_alive
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        if response.fault is not None and await self.answer_fault(request, response):
            return response.keep_alive
        await self.answer(request, response)
        return response.keep_alive


#: the marker that lets a test's fake upstreams receive schema-invalid requests
ALLOW_VIOLATIONS = "allow_upstream_violations"


def assert_no_violations(fake: FakeServer, node: Any, vendor: str) -> None:
    """For a fake's pytest fixture, at teardown: fail the test if the gateway sent the fake
    anything the vendor's schema refuses, unless the test is marked ``allow_upstream_violations``."""
    if node.get_closest_marker(ALLOW_VIOLATIONS) is None:
        assert not fake.violations, f"requests sent to the fake violate {vendor}'s schema: {fake.violations}"
