"""Streamed audio answers: speech as binary audio relayed chunk by chunk as the upstream
sends it, and the server-sent events of a streamed transcription
(``transcript.text.delta`` … ``transcript.text.done``) or of speech with
``stream_format: sse`` (``speech.audio.delta`` … ``speech.audio.done``), passed through
unchanged and read on the side for their usage.

A binary stream cannot carry an error: when the upstream breaks mid-way, the connection
to the client is aborted (a chunked body without its end), so no client takes a cut
answer for a whole one; the reservation is refunded. When the client leaves, the call is
charged (the upstream made the audio)."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

from faregate.api import (
    AttemptFailed,
    Exchange,
    GatewayError,
    JSONDecodeError,
    PassthroughStream,
    Usage,
    json_loads,
)
from faregate_adapter_openai.audio_billing import token_usage

log = logging.getLogger("faregate.relay")

TRANSCRIPT_DONE = "transcript.text.done"
SPEECH_DONE = "speech.audio.done"


class AudioEvents(PassthroughStream):
    """Forwards each event of an audio SSE stream unchanged; reads usage from the final
    event (``done_type``); an ``error`` event ends the stream with the upstream's error.
    ``fallback``: the usage billed when the final event reports none; ``other_ratios``: the
    per-minute ratio a streamed transcription is charged with."""

    def __init__(self, done_type: str, fallback: Usage | None = None,
                 other_ratios: Mapping[str, float] | None = None) -> None:
        self.done_type = done_type
        self.fallback = fallback
        self.other_ratios = other_ratios
        self.usage: Usage | None = None
        self.done = False
        self.error: GatewayError | None = None
        self.output_chars = 0

    def feed(self, event: str | None, data: bytes) -> bool:
        if data == b"[DONE]":
            self.done = True
            return True
        try:
            obj: Any = json_loads(data)
        except JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            self.error = GatewayError(502, "upstream sent a malformed stream event", code="bad_response_body",
                                      upstream=True)
            return False
        err = obj.get("error")
        if isinstance(err, dict) or obj.get("type") == "error":
            err = err if isinstance(err, dict) else obj
            self.error = GatewayError(502, str(err.get("message") or "upstream error"),
                                      type=str(err.get("type") or "upstream_error"), code=err.get("code"),
                                      upstream=True)
            return False
        kind = obj.get("type")
        delta = obj.get("delta")
        if kind == "transcript.text.delta" and isinstance(delta, str):
            self.output_chars += len(delta)
        elif kind == self.done_type:
            self.usage = token_usage(obj.get("usage")) or self.fallback
            self.done = True
        return True


async def first_chunk(ex: Exchange, resp: Any) -> bytes:
    """The first bytes of a binary answer: an answer that sends none in time, or breaks
    before, is a failed attempt (nothing reached the client, another channel may answer)."""
    failure: GatewayError
    try:
        async with asyncio.timeout(ex.gateway.settings.first_byte_timeout):
            chunk: bytes = await resp.read_chunk()
        if chunk:
            return chunk
        failure = GatewayError(502, "upstream sent an empty audio answer", code="empty_response", upstream=True)
    except TimeoutError:
        failure = GatewayError(504, "upstream sent nothing in time", code="first_byte_timeout", upstream=True)
    except Exception:  # noqa: BLE001 - the transport's own error types
        failure = GatewayError(502, "upstream audio stream broke", code="stream_broken", upstream=True)
    await resp.aclose()
    raise AttemptFailed(failure)


class StreamBroken(Exception):
    """Raised into the server when an upstream broke mid-answer: the client's connection is
    aborted rather than its body ended as if whole."""


def binary_stream(ex: Exchange, resp: Any, head: bytes,
                  charge: Callable[[str], None]) -> AsyncGenerator[bytes, None]:
    """The body of a binary answer, ``head`` first, then each chunk as it arrives.
    ``charge(end_reason)`` settles it once it ends (done or the client gone); an upstream
    failure refunds it. A body the server drops before starting it is charged as the
    client's leaving, when collected."""
    ended = [False]

    def finish(end_reason: str, failure: GatewayError | None) -> None:
        ended[0] = True
        if failure is None:
            charge(end_reason)
        else:
            ex.fail(failure)
        try:
            ex.gateway.spawn(resp.aclose())
        except RuntimeError:  # collected outside the event loop: nothing left to close on
            pass

    def unsent() -> None:
        if not ended[0]:
            finish("client_gone", None)

    body = _relay(ex, resp, head, finish)
    weakref.finalize(body, unsent)
    return body


async def _relay(ex: Exchange, resp: Any, head: bytes,
                 finish: Callable[[str, GatewayError | None], None]) -> AsyncGenerator[bytes, None]:
    idle = ex.gateway.settings.stream_idle_timeout
    end_reason, failure = "done", None
    try:
        yield head
        while True:
            async with asyncio.timeout(idle):
                chunk: bytes = await resp.read_chunk()
            if not chunk:
                break
            yield chunk
    except (asyncio.CancelledError, GeneratorExit):
        end_reason = "client_gone"
        raise
    except TimeoutError:
        end_reason, failure = "timeout", GatewayError(504, "upstream audio stream went idle",
                                                      code="stream_timeout", upstream=True)
    except Exception as exc:  # noqa: BLE001 - the transport's own error types
        log.warning("audio stream from channel %s broke: %s", ex.channel.id if ex.channel else 0,
                    type(exc).__name__)
        end_reason, failure = "upstream_error", GatewayError(502, "upstream audio stream broke",
                                                             code="stream_broken", upstream=True)
    finally:
        finish(end_reason, failure)
    if failure is not None:
        raise StreamBroken(failure.message)
