"""One socket write per answer instead of two: Hypercorn's HTTP/1.1 protocol writes a
response's head as soon as the app starts the response, then its body in a second write
(a ``send`` syscall each, and on loopback each runs the peer's TCP receive path too), though
the body nearly always follows in the same turn of the event loop.

Here the head is held until the body's end, or until the loop turns, and goes out in one
write with the body bytes that came meanwhile: a regular answer, and a short stream sent as
its last chunk with the end (a ``LastChunk``), leave in one write, the chunked body's end
included; a longer stream's head and first bytes leave when the loop turns (a relayed
stream's first bytes are in hand when its answer starts), so no client waits longer for them.
The turn's write is made at once on the connection's transport (in order after anything
written before), not through a task.
Hypercorn's own lines (the date, the server) are made once a second. The head's header lines
are checked in one pass over them all (:func:`response_head`) instead of two regular
expressions per line; a line that fails it goes through h11's own checks, which refuse it as
before; h11's last touch of the head (the framing lines it adds, :class:`FramedConnection`)
does not check them all again. Everything else Hypercorn does is unchanged. :func:`install`
swaps the HTTP/1.1 protocol class Hypercorn's connection wrapper instantiates; the app factory
calls it, once per process."""

from __future__ import annotations

import asyncio
import re
import time
from itertools import chain
from typing import Any

import h11
import hypercorn.protocol
from hypercorn.config import Config
from hypercorn.events import RawData
from hypercorn.protocol.events import Body, EndBody, Response
from hypercorn.protocol.events import Event as StreamEvent
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.typing import H11SendableEvent

#: a byte no header value may hold (h11's field-vchar: no NUL, no whitespace but space and tab)
_BAD_IN_VALUE = re.compile(rb"[\x00\n\r\x0b\x0c]")
#: a header name is a token (h11's field-name)
_TOKENS = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")


def response_head(headers: list[tuple[bytes, bytes]], status_code: int) -> h11.Response:
    """The h11 response for ``headers``, as ``h11.Response(headers=…, status_code=…)`` makes
    it. Hypercorn's ``build_and_validate_headers`` has stripped every name and value of
    surrounding whitespace and refused an empty name already; what h11 checks besides (every
    name a token, no value with NUL or a line break) is checked here on all the names and all
    the values at once, and the lines are then handed to h11 as checked. Any doubt, and h11
    checks them itself (and refuses a bad one, as before)."""
    names = b"".join([name for name, _ in headers])
    values = b"\t".join([value for _, value in headers])
    checked = _TOKENS.fullmatch(names) is not None and _BAD_IN_VALUE.search(values) is None
    return h11.Response(headers=headers, status_code=status_code, _parsed=checked)


#: Hypercorn's own header lines of the second last asked for: (second, config, lines)
_SERVER_HEADERS: list[tuple[int, Config, list[tuple[bytes, bytes]]]] = []


def server_headers(config: Config) -> list[tuple[bytes, bytes]]:
    """``config.response_headers("h11")`` (the date, the server's name), made once a second:
    the date has a second's resolution, and Hypercorn formatted it for every answer."""
    second = int(time.time())
    if _SERVER_HEADERS:
        made_at, made_for, lines = _SERVER_HEADERS[0]
        if made_at == second and made_for is config:
            return lines
    lines = config.response_headers("h11")
    _SERVER_HEADERS[:] = [(second, config, lines)]
    return lines


_FRAMING = (b"content-length", b"transfer-encoding")


class FramedConnection(h11.Connection):
    """h11's connection, which sets an answer's framing lines (a body of unknown length is
    chunked) as h11 does, without checking every header line twice more: h11 rebuilds the
    head through two ``set_comma_header`` calls and a new ``Response``, each running its two
    regular expressions over every line, though the lines were checked when the head was
    made. Only the common case is taken here (an HTTP/1.1 client, the connection kept alive,
    not CONNECT); any other goes through h11's own code. The head is the one h11 makes
    (core/tests/test_h11_writes.py compares them)."""

    def _clean_up_response_headers_for_sending(self, response: h11.Response) -> h11.Response:
        if (not self._cstate.keep_alive or self.their_http_version != b"1.1" or self._request_method == b"CONNECT"
                or type(response) is not h11.Response):
            return super()._clean_up_response_headers_for_sending(response)
        items = response.headers._full_items
        names = {name for _, name, _ in items}
        # h11's _body_framing, a HEAD answered as a GET: no fixed length means chunked
        if response.status_code in (204, 304) or (b"content-length" in names and b"transfer-encoding" not in names):
            return response  # h11 would make the same head again
        lines = [(raw, value) for raw, name, value in items if name not in _FRAMING]
        lines.append((b"Transfer-Encoding", b"chunked"))
        return h11.Response(headers=lines, status_code=response.status_code, http_version=response.http_version,
                            reason=response.reason, _parsed=True)


class CoalescingH11Protocol(H11Protocol):
    #: the answer's bytes not written yet: its head, and the body's bytes that came in the same turn
    _held: bytes | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if type(self.connection) is h11.Connection:  # Hypercorn's, made just now: nothing sent or read yet
            self.connection.__class__ = FramedConnection

    async def stream_send(self, event: StreamEvent) -> None:
        if self._held is not None and not isinstance(event, Body | EndBody):
            await self._send_held()
        if isinstance(event, Response) and event.status_code >= 200:  # Hypercorn's, the head checked at once
            headers = list(chain(event.headers, server_headers(self.config)))
            if self.keep_alive_requests >= self.config.keep_alive_max_requests:
                headers.append((b"connection", b"close"))
            await self._send_h11_event(response_head(headers, event.status_code))
            return
        await super().stream_send(event)

    async def _send_h11_event(self, event: H11SendableEvent) -> None:
        try:
            data = self.connection.send(event) or b""
        except h11.LocalProtocolError:
            if self.connection.their_state != h11.ERROR:
                raise
            return  # as Hypercorn: nothing to send to a client that broke the protocol
        if isinstance(event, h11.Response):
            self._held = data
            asyncio.get_running_loop().call_soon(self._turned)
            return
        if self._held is not None:
            if isinstance(event, h11.Data):  # the end may still come in this turn
                self._held += data
                return
            data, self._held = self._held + data, None
        if data:  # a Content-Length body's end is no bytes: not a write of its own
            await self.send(RawData(data=data))

    def _turned(self) -> None:
        """The loop turned with the answer not ended: what is held goes out now."""
        held, self._held = self._held, None
        if held is None:
            return
        # Hypercorn's asyncio server writes under a lock, then awaits the drain: a write here
        # is appended to the transport after whatever went before, so it keeps the order
        writer = getattr(getattr(self.send, "__self__", None), "writer", None)
        if isinstance(writer, asyncio.StreamWriter) and not writer.is_closing():
            writer.write(held)
        else:  # another server (or a closing connection, whose errors its send handles)
            asyncio.ensure_future(self.send(RawData(data=held)))

    async def _send_held(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            await self.send(RawData(data=held))


def install() -> None:
    hypercorn.protocol.H11Protocol = CoalescingH11Protocol  # type: ignore[attr-defined]  # the name its connection wrapper reads
