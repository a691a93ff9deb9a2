"""One socket write per answer instead of two: Hypercorn's HTTP/1.1 protocol writes a
response's head as soon as the app starts the response, then its body in a second write
(a ``send`` syscall each, and on loopback each runs the peer's TCP receive path too), though
the body nearly always follows in the same turn of the event loop.

Here the head is held until the body's first bytes (or the body's end) come and goes out in
one write with them (a relayed stream's first bytes are in hand when its answer starts); if
the loop turns before they come, the head goes out alone then, so a client never waits
longer for it.
Everything else Hypercorn does is unchanged. :func:`install` swaps the HTTP/1.1 protocol
class Hypercorn's connection wrapper instantiates; the app factory calls it, once per process."""

from __future__ import annotations

import asyncio

import h11
import hypercorn.protocol
from hypercorn.events import RawData
from hypercorn.protocol.events import Body, EndBody
from hypercorn.protocol.events import Event as StreamEvent
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.typing import H11SendableEvent


class CoalescingH11Protocol(H11Protocol):
    _held_head: bytes | None = None

    async def stream_send(self, event: StreamEvent) -> None:
        if self._held_head is not None and not isinstance(event, Body | EndBody):
            await self._send_held_head()
        await super().stream_send(event)

    async def _send_h11_event(self, event: H11SendableEvent) -> None:
        try:
            data = self.connection.send(event) or b""
        except h11.LocalProtocolError:
            if self.connection.their_state != h11.ERROR:
                raise
            return  # as Hypercorn: nothing to send to a client that broke the protocol
        if isinstance(event, h11.Response):
            self._held_head = data
            asyncio.get_running_loop().call_soon(self._head_overdue)
            return
        if self._held_head is not None:
            data, self._held_head = self._held_head + data, None
        if data:  # a Content-Length body's end is no bytes: not a write of its own
            await self.send(RawData(data=data))

    def _head_overdue(self) -> None:
        if self._held_head is not None:  # the body did not follow at once: a stream's first bytes are awaited
            asyncio.ensure_future(self._send_held_head())

    async def _send_held_head(self) -> None:
        head, self._held_head = self._held_head, None
        if head is not None:
            await self.send(RawData(data=head))


def install() -> None:
    hypercorn.protocol.H11Protocol = CoalescingH11Protocol  # type: ignore[attr-defined]  # the name its connection wrapper reads
