"""One realtime session on the wire: frames relayed both ways as they come (one message at
a time, never a whole session held), read on the side for billing
(:class:`~faregate_adapter_openai.realtime.billing.SessionBill`), under the session's
limits; ended by either side, the idle or the session time limit, or the quota; always
billed and reported once, however it ends."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from faregate.api import (
    Exchange,
    GatewayError,
    JSONDecodeError,
    UpstreamTransportError,
    UpstreamWebSocket,
    Usage,
    WebSocketPeer,
    json_dumps,
    json_loads,
)
from faregate_adapter_openai.realtime import protocol as p
from faregate_adapter_openai.realtime.billing import SessionBill

log = logging.getLogger("faregate.realtime")

#: runs work that must outlive the client's connection (``Services.spawn``)
Spawn = Callable[[Coroutine[Any, Any, Any]], object]

#: frames larger than this are parsed in a worker thread, not on the event loop (rare: a long
#: ``response.done``, a big audio chunk); every frame is read, whatever its size
PARSE_LIMIT = 256 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    idle_seconds: float
    max_seconds: float
    max_message: int  # bytes (characters of a text frame)
    per_second: float  # client frames a second (0: unlimited)
    drain_seconds: float  # how long a cut-off response may take to report its usage


@dataclass(frozen=True, slots=True)
class SessionEnd:
    """Why the session ends: the report's ``end_reason``, the error the client is told
    (None: a quiet close), the close code."""

    reason: str
    error: GatewayError | None = None
    code: int = 1000


def _status(end: SessionEnd) -> int:
    return end.error.status if end.error is not None else 200


class RealtimeSession:
    def __init__(self, ex: Exchange, peer: WebSocketPeer, upstream: UpstreamWebSocket, bill: SessionBill,
                 limits: Limits, subprotocol: str | None, spawn: Spawn) -> None:
        self.ex = ex
        self.spawn = spawn
        self.draining = False
        self.peer = peer
        self.upstream = upstream
        self.bill = bill
        self.limits = limits
        self.subprotocol = subprotocol
        self.secrets = tuple(s for s in ex.secrets if s)
        self.started = self.active = time.monotonic()
        self.allowance = limits.per_second  # a token bucket of client frames, a second's worth
        self.refilled = self.started
        #: why the quota could not cover a response the upstream started (the session ends)
        self.shortfall: GatewayError | None = None

    async def run(self) -> None:
        end = SessionEnd("client_gone", GatewayError(499, "the client left", code="client_gone"), 1001)
        try:
            await self.peer.accept(self.subprotocol)
            end = await self.relay()
            await self.goodbye(end)
        except asyncio.CancelledError:  # the server cancels the view when the client closes
            end = self.client_left()
            raise
        finally:  # however it ends, it is billed and reported
            await self.wind_down(end)

    def client_left(self) -> SessionEnd:
        """A client that closes between responses ends its session as it should; one that
        leaves while a response runs is "gone" (the response is cut off)."""
        if self.bill.flights:
            return SessionEnd("client_gone", GatewayError(499, "the client left mid-response", code="client_gone"),
                              1001)
        return SessionEnd("client_closed")

    async def goodbye(self, end: SessionEnd) -> None:
        """The error event (when the gateway ends the session) and the close."""
        try:
            if end.error is not None:
                await self.peer.send(p.error_event(end.error, self.ex.request_id))
            await self.peer.close(end.code, end.reason)
        except Exception:  # noqa: BLE001 - a client that left meanwhile: nothing to tell it
            log.debug("realtime client gone before the goodbye", exc_info=True)

    # ---- the two directions --------------------------------------------------------------
    async def relay(self) -> SessionEnd:
        tasks = {asyncio.create_task(self.from_upstream(), name="realtime-up"),
                 asyncio.create_task(self.from_client(), name="realtime-down")}
        try:
            deadline = self.started + self.limits.max_seconds
            while True:
                now = time.monotonic()
                wait = min(deadline - now, self.active + self.limits.idle_seconds - now)
                done, _ = await asyncio.wait(tasks, timeout=max(0.0, wait), return_when=asyncio.FIRST_COMPLETED)
                if done:
                    return self.ended(next(iter(done)))
                now = time.monotonic()
                if now >= deadline:
                    return SessionEnd("max_duration", GatewayError(
                        408, f"the session reached its time limit ({self.limits.max_seconds:g} s)",
                        type="invalid_request_error", code="session_expired"))
                if now - self.active >= self.limits.idle_seconds:
                    return SessionEnd("idle_timeout", GatewayError(
                        408, f"the session was idle for {self.limits.idle_seconds:g} s",
                        type="invalid_request_error", code="idle_timeout"))
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def ended(self, task: asyncio.Task[SessionEnd]) -> SessionEnd:
        failure = task.exception()
        if failure is None:
            return task.result()
        if isinstance(failure, ConnectionError | OSError):  # the client's connection broke under a send
            return SessionEnd("client_gone", GatewayError(499, "the client left", code="client_gone"), 1001)
        log.error("realtime session %s failed", self.ex.request_id, exc_info=failure)
        return SessionEnd("internal_error", GatewayError(500, "internal error", code="internal_error"), 1011)

    async def from_upstream(self) -> SessionEnd:
        while True:
            try:
                message = await self.upstream.receive()
            except UpstreamTransportError:
                message = None
            if message is None:
                code = self.upstream.close_code
                if code in (1000, 1001) and not self.bill.flights:
                    return SessionEnd("upstream_closed")
                return SessionEnd("upstream_error", GatewayError(
                    502, "the upstream ended the realtime session", type="server_error",
                    code="upstream_closed", upstream=True), 1011)
            self.active = time.monotonic()
            if isinstance(message, str):
                message = await self.read_upstream(p.scrub(message, self.secrets))
            await self.peer.send(message)
            if self.shortfall is not None:  # a response started that the quota cannot cover:
                return SessionEnd("quota_exhausted", self.shortfall, 1008)  # cancelled as the session ends
            if self.bill.standing is None and not self.bill.flights:
                try:  # after a response.done went out: the next response's reservation
                    await self.bill.replenish()
                except GatewayError as err:
                    return SessionEnd("quota_exhausted", err, 1008)

    @staticmethod
    async def parse(message: str) -> Any:
        """The frame's JSON (None when it is none), parsed off the event loop when large."""
        try:
            return json_loads(message) if len(message) <= PARSE_LIMIT else await asyncio.to_thread(json_loads, message)
        except JSONDecodeError:
            return None

    async def read_upstream(self, message: str) -> str:
        """Bill on the side; the message as the client gets it (an error event redacted). A
        response the quota cannot cover is tracked all the same (billed, cancelled as the
        session ends) and :attr:`shortfall` says why the session ends."""
        event = await self.parse(message)
        if not isinstance(event, dict):
            return message
        kind = event.get("type")
        if kind in p.AUDIO_DELTAS or kind in p.TEXT_DELTAS:
            delta = event.get("delta")
            if isinstance(delta, str):
                self.bill.delta(event.get("response_id"), kind in p.AUDIO_DELTAS, len(delta))
        elif kind in (p.RESPONSE_CREATED, p.RESPONSE_DONE):
            response = event.get("response")
            rid = response.get("id") if isinstance(response, dict) else None
            if isinstance(response, dict) and isinstance(rid, str):
                # a response the bill does not know yet gets a reservation (none while draining)
                shortfall = await self.bill.response_created(rid, fund=not self.draining)
                if kind == p.RESPONSE_DONE:
                    self.bill.response_done(rid, response)
                self.shortfall = self.shortfall or shortfall
        elif kind == p.ERROR:
            return p.safe_error_event(event, message)
        return message

    async def from_client(self) -> SessionEnd:
        while True:
            message = await self.peer.receive()
            self.active = now = time.monotonic()
            if not message:  # an empty frame (Quart hands an empty binary one over as None)
                continue
            if len(message) > self.limits.max_message:
                return SessionEnd("message_too_large", GatewayError(
                    413, f"a client event may be at most {self.limits.max_message} bytes",
                    type="invalid_request_error", code="message_too_large"), 1009)
            if self.limits.per_second:
                self.allowance = min(self.limits.per_second,
                                     self.allowance + (now - self.refilled) * self.limits.per_second)
                self.refilled = now
                if self.allowance < 1:
                    return SessionEnd("rate_limited", GatewayError(
                        429, f"more than {self.limits.per_second:g} client events a second",
                        type="rate_limit_error", code="rate_limit_exceeded"), 1008)
                self.allowance -= 1
            if isinstance(message, str):
                try:
                    message = await self.read_client(message)
                except GatewayError as refused:  # a response the quota cannot cover: it never goes
                    return SessionEnd("quota_exhausted", refused, 1008)
            try:
                await self.upstream.send(message)
            except UpstreamTransportError:
                return SessionEnd("upstream_error", GatewayError(
                    502, "the upstream connection broke", type="server_error", code="upstream_closed",
                    upstream=True), 1011)

    async def read_client(self, message: str) -> str:
        """Bill on the side; the message as it goes upstream: a ``response.create`` is paid
        for first (a 403 ``GatewayError`` when the quota cannot cover it), and a response or
        session left without an output bound gets the model's (re-encoded, else as it came)."""
        event = await self.parse(message)  # not JSON: relayed as it is, the upstream answers it
        if not isinstance(event, dict):
            return message
        self.bill.client_event(event)
        kind = event.get("type")
        bounded = None
        if kind == p.RESPONSE_CREATE:
            bounded = await self.bill.fund_response(event)
        elif kind == p.SESSION_UPDATE:
            bounded = self.bill.bounded_session(event)
        return message if bounded is None else json_dumps(bounded).decode()

    # ---- the end -------------------------------------------------------------------
    async def wind_down(self, end: SessionEnd) -> None:
        """Bill and report, then close the upstream. Responses still running on a live
        upstream are cancelled there and given up to ``drain_seconds`` to report their
        usage (this may run in a view cancelled because the client left: the server waits
        for it); whatever is still open then is billed on what was seen of it."""
        try:
            if self.bill.flights and end.reason not in ("upstream_error", "upstream_closed"):
                self.draining = True
                await self.drain()
        finally:
            bill = self.bill
            bill.close(end.reason)
            self.ex.finish(_status(end), end.reason, Usage(input_tokens=bill.total.input_tokens,
                                                           output_tokens=bill.total.output_tokens), bill.quota)
            self.spawn(self.upstream.close())

    async def drain(self) -> None:
        cancelled: set[str] = set()
        try:
            async with asyncio.timeout(self.limits.drain_seconds):
                while self.bill.flights:
                    for rid in [rid for rid in self.bill.flights if rid not in cancelled]:  # one started meanwhile too
                        cancelled.add(rid)
                        await self.upstream.send(json_dumps({"type": p.RESPONSE_CANCEL, "response_id": rid}).decode())
                    message = await self.upstream.receive()
                    if message is None:
                        return
                    if isinstance(message, str):
                        await self.read_upstream(message)
        except (TimeoutError, UpstreamTransportError):
            pass
