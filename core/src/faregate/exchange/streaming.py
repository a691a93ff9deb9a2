"""A streamed answer: upstream bytes split by the provider's framing, forwarded as they
are (same format) or converted through the canonical events, with usage and output
size read on the side; settled when the stream ends, however it ends.

When the client leaves mid-stream, the rest of the upstream is read on the side
(bounded by ``client_gone_drain_seconds``) so the bill uses the upstream's own usage.
The upstream is read in the request's own task: a cancelled read leaves aiohttp's
buffer intact, and the drain picks up where it stopped, so no reader task is needed.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING

from faregate.awaitables import idle_limit, time_limit
from faregate.canonical import ReasoningDelta, StreamError, TextDelta, ToolCallDelta, Usage, UsageEvent
from faregate.contracts import PassthroughStream, Provider, StreamEncoder, StreamParser
from faregate.contracts.inbound import LastChunk
from faregate.errors import GatewayError
from faregate.exchange.attempts import AttemptFailed
from faregate.framing import Framing, FramingError, SSESplitter, splitter_for
from faregate.security.redact import redact
from faregate.upstream import UpstreamResponse, UpstreamTransportError

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange

log = logging.getLogger("faregate.relay")

#: streamed answers being relayed to clients in this process (read by the metrics)
ACTIVE_STREAMS = [0]


def _malformed() -> GatewayError:
    return GatewayError(502, "upstream sent a malformed stream event", code="bad_response_body", upstream=True)


class StreamReader:
    """Reads framed upstream events: forwarded as they are (``filt``) or converted
    (``parser``); usage and output size on the side."""

    __slots__ = ("filt", "parser", "splitter", "_sse", "_usage", "_chars")

    def __init__(self, filt: PassthroughStream | None, parser: StreamParser | None, framing: Framing) -> None:
        self.filt = filt
        self.parser = parser
        self.splitter = splitter_for(framing)
        # an SSE stream forwarded as it is: a read's events in one list (the hot path)
        self._sse = self.splitter if filt is not None and isinstance(self.splitter, SSESplitter) else None
        self._usage: Usage | None = None
        self._chars = 0

    @property
    def done(self) -> bool:
        if self.filt is not None:
            return self.filt.done
        return self.parser is not None and self.parser.done

    @property
    def usage(self) -> Usage | None:
        return self.filt.usage if self.filt is not None else self._usage

    @property
    def output_chars(self) -> int:
        return self.filt.output_chars if self.filt is not None else self._chars

    @property
    def other_ratios(self) -> Mapping[str, float] | None:
        return self.filt.other_ratios if self.filt is not None else None

    def trailer(self) -> bytes:
        return self.filt.trailer() if self.filt is not None else b""

    def feed(self, chunk: bytes, encoder: StreamEncoder | None) -> list[bytes]:
        """Bytes for the client (none when ``encoder`` is None: draining a converted stream)."""
        if self._sse is not None:
            return self._feed_sse(chunk)
        out: list[bytes] = []
        filt = self.filt
        for raw, event, data in self.splitter.feed(chunk):
            if filt is not None:
                try:
                    forward = filt.feed(event, data)
                except (ValueError, TypeError, KeyError, AttributeError):  # an event of the wrong shape
                    raise _malformed() from None
                if forward:
                    out.append(raw if forward is True else forward)  # bytes: the event re-framed
                if filt.error is not None:
                    raise filt.error
                continue
            assert self.parser is not None
            try:
                events = self.parser.feed(event, data)
            except (ValueError, TypeError, KeyError, AttributeError):  # incl. JSON errors
                raise _malformed() from None
            for ev in events:
                if isinstance(ev, UsageEvent):
                    if self._usage is None:
                        self._usage = Usage()
                    self._usage.merge(ev.usage)
                    continue
                if isinstance(ev, StreamError):
                    raise GatewayError(502, ev.message, type=ev.type, code=ev.code, upstream=True,
                                       kind=ev.error_kind)
                if isinstance(ev, TextDelta | ReasoningDelta):
                    self._chars += len(ev.text)
                elif isinstance(ev, ToolCallDelta):
                    self._chars += len(ev.arguments) + len(ev.name or "")
                if encoder is not None:
                    out.append(encoder.encode(ev))
        return out

    def _feed_sse(self, chunk: bytes) -> list[bytes]:
        """``feed`` for an SSE stream forwarded as it is: when every event of the read goes
        unchanged, their bytes go in one piece (the read's own when it holds whole events),
        with no copy per event to join."""
        splitter, filt = self._sse, self.filt
        assert splitter is not None and filt is not None
        events, whole = splitter.split(chunk)
        out: list[bytes] | None = None  # None while every event goes unchanged
        for i, (raw, event, data) in enumerate(events):
            try:
                forward = filt.feed(event, data)
            except (ValueError, TypeError, KeyError, AttributeError):  # an event of the wrong shape
                raise _malformed() from None
            if forward is not True:
                if out is None:
                    out = [ev[0] for ev in events[:i]]
                if forward:
                    out.append(forward)  # bytes: the event re-framed
            elif out is not None:
                out.append(raw)
            if filt.error is not None:
                raise filt.error
        splitter.check()
        if out is not None:
            return out
        if not events:
            return []
        return [whole] if whole is not None else [ev[0] for ev in events]


class OpenedStream:
    """A stream read up to its first bytes for the client: what comes before them can
    still fail over to another channel; what comes after is in-band."""

    __slots__ = ("reader", "encoder", "head", "first_token_ms")

    def __init__(self, reader: StreamReader, encoder: StreamEncoder, head: bytes, first_token_ms: int | None) -> None:
        self.reader = reader
        self.encoder = encoder
        self.head = head
        self.first_token_ms = first_token_ms


async def open_stream(ex: Exchange, provider: Provider, resp: UpstreamResponse, passthrough: bool,
                      filt: PassthroughStream | None = None) -> OpenedStream:
    """Read until the stream has bytes for the client (or is complete). A stream that
    closes, stalls past ``first_byte_timeout`` or is malformed before that raises
    :class:`AttemptFailed`: nothing reached the client yet, so another channel may answer.
    ``filt``: the pass-through reader when it is not the provider's own (a native endpoint's)."""
    summary = ex.summary
    assert summary is not None
    if filt is None and passthrough:
        filt = provider.passthrough_stream(summary)
    if filt is not None:
        reader = StreamReader(filt, None, filt.framing or provider.stream_framing)
    else:
        reader = StreamReader(None, provider.stream_parser(), provider.stream_framing)
    # same format too: in-band errors come from the client's format
    encoder = ex.format.stream_encoder(summary, ex.request_id)
    failure: GatewayError | None = None
    try:
        with time_limit(ex.gateway.settings.first_byte_timeout):
            while True:
                chunk = await resp.read_chunk()
                if not chunk:
                    failure = GatewayError(502, "upstream closed the stream before sending anything",
                                           code="empty_response", upstream=True)
                    break
                out = reader.feed(chunk, encoder)
                if out or reader.done:
                    head = b"".join(out)
                    first_token_ms = int((time.perf_counter() - ex.started) * 1000) if out else None
                    return OpenedStream(reader, encoder, head, first_token_ms)
    except TimeoutError:
        failure = GatewayError(504, "upstream sent nothing in time", code="first_byte_timeout", upstream=True)
    except GatewayError as err:  # malformed, or an error event before any content
        failure = err
        failure.message = redact(failure.message, ex.secrets)
    except (UpstreamTransportError, FramingError) as exc:
        failure = GatewayError(502, "upstream stream broke", code="stream_broken", upstream=True)
        log.warning("stream from channel %s broke before its first byte: %s",
                    ex.channel.id if ex.channel else 0, type(exc).__name__)
    await resp.aclose()
    raise AttemptFailed(failure)


def stream_answer(ex: Exchange, resp: UpstreamResponse, opened: OpenedStream) -> AsyncGenerator[bytes, None]:
    """The body of a streamed answer, settled however it ends, read or not. The server may
    close the body, or drop it, before asking for its first chunk (the client left between
    the answer's head and its body): an async generator that never started runs no
    ``finally``, so a finalizer settles it when it is collected. Nothing is added per chunk."""
    ended = [False]  # the body's finally ran: it settled (or drains) itself

    def unsent() -> None:
        if ended[0]:
            return
        ACTIVE_STREAMS[0] -= 1
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # dropped outside the loop (interpreter exit): bill what was seen
            ex.settle(opened.reader.usage, end_reason="client_gone", output_chars=opened.reader.output_chars,
                      first_token_ms=opened.first_token_ms, other_ratios=opened.reader.other_ratios)
            return
        end_stream(ex, resp, opened.reader, opened.first_token_ms, end_reason="client_gone", drain_rest=True)

    body = stream_body(ex, resp, opened, ended)
    weakref.finalize(body, unsent)
    ACTIVE_STREAMS[0] += 1  # until the body's finally, or unsent()
    return body


def end_stream(ex: Exchange, resp: UpstreamResponse, reader: StreamReader, first_token_ms: int | None, *,
               end_reason: str, drain_rest: bool) -> None:
    """Settle an ended stream and close its upstream; with ``drain_rest`` (the client left
    before the upstream finished) read the rest on the side first, so the bill uses the
    upstream's own usage."""
    gw = ex.gateway
    if drain_rest and gw.settings.client_gone_drain_seconds > 0:
        gw.spawn(drain(ex, resp, reader, first_token_ms))
        return
    ex.settle(reader.usage, end_reason=end_reason, output_chars=reader.output_chars, first_token_ms=first_token_ms,
              other_ratios=reader.other_ratios)
    if not resp.release():  # an HTTP stream's connection goes back at once: no task for it
        gw.spawn(resp.aclose())


async def stream_body(ex: Exchange, resp: UpstreamResponse, opened: OpenedStream,
                      ended: list[bool]) -> AsyncGenerator[bytes, None]:
    gw = ex.gateway
    idle = idle_limit(gw.settings.stream_idle_timeout)  # one timer for every read of the stream
    reader, encoder = opened.reader, opened.encoder
    passthrough = reader.filt is not None
    end_reason = "done" if reader.done else "eof"
    first_token_ms = opened.first_token_ms
    client_gone = False
    # the bytes read last, sent at the loop's next turn, or with the tail as the LastChunk
    # when the stream is done (a short answer's whole body and its end go out in one write)
    pending = opened.head
    try:
        while not reader.done:
            if pending:
                yield pending
                pending = b""
            # what has arrived while the client was sent the last chunk needs no idle timer
            chunk = resp.chunk_now()
            if chunk is None:
                with idle:
                    chunk = await resp.read_chunk()
            if not chunk:
                break
            out = reader.feed(chunk, encoder)
            if out:
                if first_token_ms is None:
                    first_token_ms = int((time.perf_counter() - ex.started) * 1000)
                pending = b"".join(out)
        if reader.done:
            end_reason = "done"
        tail = pending + reader.trailer()
        if end_reason != "done":
            tail += encoder.error(GatewayError(502, "upstream stream ended early", code="stream_eof",
                                               upstream=True))
        elif not passthrough:  # converted: the encoder closes the stream its own way
            tail += encoder.finish(reader.usage)
        if tail:
            yield LastChunk(tail)
    except TimeoutError:
        end_reason = "timeout"
        yield LastChunk(encoder.error(GatewayError(504, "upstream stream went idle", code="stream_timeout",
                                                   upstream=True)))
    except GatewayError as err:
        end_reason = "upstream_error"
        err.message = redact(err.message, ex.secrets)  # in-band: the upstream's words, without secrets
        yield LastChunk(encoder.error(err))
    except (UpstreamTransportError, FramingError) as exc:
        # a connection closed mid-body is the upstream ending early (eof)
        end_reason = "eof" if getattr(exc, "eof", False) else "upstream_error"
        log.warning("stream from channel %s broke: %s", ex.channel.id if ex.channel else 0, type(exc).__name__)
        yield LastChunk(encoder.error(GatewayError(502, "upstream stream broke", code="stream_broken",
                                                   upstream=True)))
    except (asyncio.CancelledError, GeneratorExit):
        end_reason = "client_gone"
        client_gone = not reader.done
        raise
    finally:
        idle.close()
        ended[0] = True
        ACTIVE_STREAMS[0] -= 1
        end_stream(ex, resp, reader, first_token_ms, end_reason=end_reason, drain_rest=client_gone)


async def drain(ex: Exchange, resp: UpstreamResponse, reader: StreamReader, first_token_ms: int | None) -> None:
    try:
        async with asyncio.timeout(ex.gateway.settings.client_gone_drain_seconds):
            while not reader.done:
                chunk = await resp.read_chunk()
                if not chunk:
                    break
                reader.feed(chunk, None)
    except (TimeoutError, GatewayError, UpstreamTransportError, FramingError):
        pass
    finally:
        ex.settle(reader.usage, end_reason="client_gone", output_chars=reader.output_chars,
                  first_token_ms=first_token_ms, other_ratios=reader.other_ratios)
        await resp.aclose()
