"""What the gateway reads and writes of OpenAI's Realtime protocol (GA, and the beta
event names where they differ): the client's key in a subprotocol, the protocol version,
the gateway's own ``error`` events, a ``response.done``'s usage, audio sizes."""

from __future__ import annotations

import math
from typing import Any

from faregate.api import GatewayError, Usage, json_dumps, upstream_error

#: the subprotocol that carries the key where a browser cannot set headers (new-api's form)
KEY_PROTOCOL = "openai-insecure-api-key."
#: the subprotocol OpenAI answers with, and the one that asks for the beta protocol
REALTIME_PROTOCOL = "realtime"
BETA_PROTOCOL = "openai-beta.realtime-v1"
BETA_HEADER = "realtime=v1"
#: an upstream's token count beyond this is not believed
MAX_TOKENS = 2**31 - 1
#: the most output a realtime response may ask for (OpenAI's ``max_output_tokens`` bound)
MAX_RESPONSE_TOKENS = 4096

#: client events whose content adds to the conversation (read for the estimate)
ITEM_CREATE = "conversation.item.create"
AUDIO_APPEND = "input_audio_buffer.append"
SESSION_UPDATE = "session.update"
RESPONSE_CREATE = "response.create"
RESPONSE_CANCEL = "response.cancel"
#: server events the gateway reads
RESPONSE_CREATED = "response.created"
RESPONSE_DONE = "response.done"
ERROR = "error"
#: deltas of a response's output, by what they carry (GA names, then beta's)
TEXT_DELTAS = frozenset({"response.output_text.delta", "response.output_audio_transcript.delta",
                         "response.text.delta", "response.audio_transcript.delta",
                         "response.function_call_arguments.delta"})
AUDIO_DELTAS = frozenset({"response.output_audio.delta", "response.audio.delta"})

#: bytes of audio a second, by format (GA ``audio/pcm`` is 24 kHz PCM16; G.711 is 8 kHz, a byte a sample)
PCM_BYTES_PER_SECOND = 48_000
G711_BYTES_PER_SECOND = 8_000
G711_FORMATS = frozenset({"audio/pcmu", "audio/pcma", "g711_ulaw", "g711_alaw"})
#: OpenAI's audio token rates: 1 token per 100 ms of user audio, per 50 ms of assistant audio
USER_AUDIO_TOKENS_PER_SECOND = 10
ASSISTANT_AUDIO_TOKENS_PER_SECOND = 20


def subprotocol_key(offered: tuple[str, ...]) -> str | None:
    """The API key of an ``openai-insecure-api-key.<key>`` subprotocol."""
    for protocol in offered:
        if protocol.startswith(KEY_PROTOCOL):
            return protocol[len(KEY_PROTOCOL):].strip() or None
    return None


def wants_beta(headers: Any, offered: tuple[str, ...]) -> bool:
    """Whether the client speaks the beta protocol: ``OpenAI-Beta: realtime=v1`` (SDKs) or
    the ``openai-beta.realtime-v1`` subprotocol (browsers). GA clients send neither."""
    return BETA_HEADER in str(headers.get("openai-beta") or "") or BETA_PROTOCOL in offered


def error_event(err: GatewayError, request_id: str) -> str:
    """The gateway's error as the realtime ``error`` event new-api sends."""
    return json_dumps({"type": ERROR, "event_id": f"evt_{request_id}",
                       "error": {"type": err.type, "code": err.code, "message": f"{err.message} (request id: "
                                 f"{request_id})", "param": err.param, "event_id": None}}).decode()


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """An upstream frame without the channel's secrets (verbatim); the frame as it came
    when it holds none, which is every frame of an honest upstream."""
    for secret in secrets:
        if len(secret) >= 6 and secret in text:
            text = text.replace(secret, "[REDACTED]")
    return text


def safe_error_event(event: dict[str, Any], raw: str) -> str:
    """An upstream's ``error`` event with key-shaped strings redacted from its message
    (what an upstream echoes of a credential must not reach the client)."""
    err = upstream_error(400, raw.encode())
    original = event.get("error") if isinstance(event.get("error"), dict) else {}
    assert isinstance(original, dict)
    return json_dumps({**event, "error": {**original, "type": err.type, "code": err.code,
                                          "message": err.message}}).decode()


def _count(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS:
        return value
    return 0


def response_usage(response: Any) -> Usage | None:
    """A ``response.done``'s usage in the gateway's convention: cached input as cache
    reads (audio or text), the uncached audio input as ``audio_tokens``, audio output as
    ``output_audio_tokens``. None when the response reports none."""
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return None
    given, made = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
    inputs = usage.get("input_token_details")
    inputs = inputs if isinstance(inputs, dict) else {}
    outputs = usage.get("output_token_details")
    outputs = outputs if isinstance(outputs, dict) else {}
    audio_in, text_in = _count(inputs.get("audio_tokens")), _count(inputs.get("text_tokens"))
    cached = min(_count(inputs.get("cached_tokens")), given)
    details = inputs.get("cached_tokens_details")
    if isinstance(details, dict):
        cached_audio = _count(details.get("audio_tokens"))
    elif audio_in and cached:  # no breakdown (Azure): the cached part split as the input is (new-api)
        cached_audio = cached * audio_in // max(1, audio_in + text_in)
    else:
        cached_audio = 0
    audio_out = min(_count(outputs.get("audio_tokens")), made)
    uncached_audio = max(0, min(audio_in - min(cached_audio, audio_in), given - cached))
    return Usage(input_tokens=given, output_tokens=made, cache_read_tokens=cached, audio_tokens=uncached_audio,
                 output_audio_tokens=audio_out)


def base64_bytes(length: int) -> int:
    """The decoded size of ``length`` base64 characters."""
    return length * 3 // 4


def audio_tokens(size: int, bytes_per_second: int, per_second: int) -> int:
    """Tokens of ``size`` bytes of audio at OpenAI's rate ``per_second``."""
    return math.ceil(size / bytes_per_second * per_second) if size > 0 else 0


def bytes_per_second(audio_format: Any) -> int:
    """Bytes a second of a session's audio format (GA ``{"type": "audio/pcmu"}`` or beta ``"g711_ulaw"``)."""
    kind = audio_format.get("type") if isinstance(audio_format, dict) else audio_format
    return G711_BYTES_PER_SECOND if kind in G711_FORMATS else PCM_BYTES_PER_SECOND
