"""How the audio endpoints are priced, reserved and charged (docs/openai-endpoints.md).

Transcriptions and translations:

* a per-call price (``ModelPrice``) is read as US dollars **per minute of audio**: the
  other ratio ``audio_minutes`` (whole seconds, at least one, over 60) multiplies it. The
  seconds are the upstream's (``usage.seconds``, or a verbose answer's ``duration``), else
  the upload's own duration (read from the file), else an estimate from its size;
* a token price (``ModelRatio``) bills the upstream's reported tokens (audio input tokens
  at ``AudioRatio``, output at ``CompletionRatio``); without them, the audio's duration as
  new-api counts audio time: 1,000 audio tokens per minute (priced at ``AudioRatio``).

Speech: a per-call price is per call (new-api's meaning); a token price bills the
upstream's reported tokens (an ``sse`` stream reports them), else one input token per
character of ``input`` and ``instructions`` (OpenAI prices tts-1 per character).

What is reserved follows the same rule with what is known before the call: the upload's
duration, the input's characters."""

from __future__ import annotations

import io
import math
from typing import Any, TypeGuard

import mutagen

from faregate.api import Exchange, RequestSummary, Usage, estimator
from faregate_adapter_openai.audio_requests import SpeechAsk, TranscriptionAsk

#: the other ratio of a per-minute price, by name (logged)
MINUTES = "audio_minutes"
#: new-api's count of audio time in tokens (its OpenAI TTS handler): 1,000 per minute
AUDIO_TOKENS_PER_MINUTE = 1000
#: the transcript reserved per minute of audio (fast speech is about 200 words a minute)
TRANSCRIPT_TOKENS_PER_MINUTE = 400
#: an upload whose duration cannot be read is taken as 128 kbit/s audio (a common MP3 rate)
ESTIMATED_BYTES_PER_SECOND = 16_000
#: durations beyond a day are not believed (a corrupt header, an absurd upstream report)
MAX_SECONDS = 86_400.0
#: a speech answer's output reserved per input character (gpt-4o-mini-tts: ~1.4 audio tokens)
SPEECH_TOKENS_PER_CHAR = 2
#: an upstream token count beyond this is not believed
MAX_TOKENS = 2**31 - 1


def read_duration(data: bytes) -> float | None:
    """The duration in seconds that the file's own headers declare (mutagen: MP3, MP4/M4A,
    Ogg, FLAC, WAV …), None when they cannot be read. CPU work: call it off the event loop."""
    try:
        parsed: Any = mutagen.File(io.BytesIO(data))
        seconds = float(parsed.info.length) if parsed is not None else None
    except Exception:  # noqa: BLE001 - a malformed file may raise anything from the parsers
        return None
    return seconds if seconds is not None and 0 < seconds <= MAX_SECONDS else None


def size_seconds(size: int) -> float:
    """The estimate of an upload's duration from its size."""
    return min(MAX_SECONDS, max(1.0, size / ESTIMATED_BYTES_PER_SECOND))


def minutes(seconds: float) -> float:
    """Billed minutes: whole seconds (rounded, at least one) over 60, as OpenAI bills audio."""
    return max(1, math.floor(seconds + 0.5)) / 60


def duration_tokens(seconds: float) -> int:
    """new-api's audio tokens for ``seconds`` of audio: 1,000 a minute, started seconds counted."""
    return max(1, round(math.ceil(seconds) / 60 * AUDIO_TOKENS_PER_MINUTE))


def per_minute(ex: Exchange, model: str) -> bool:
    """Whether ``model`` has a per-call price (read as per minute here). The options the
    default pricer reads: known before admission, so the reservation follows the same rule."""
    return ex.options.price_of(model) is not None  # by new-api's matching name, as the default pricer


# ---- transcriptions and translations --------------------------------------------------------
def transcription_summary(ask: TranscriptionAsk, seconds: float, per_call: bool) -> RequestSummary:
    """The prompt and the audio as tokens, a transcript's worth of output; the minutes as
    the other ratio of a per-minute price."""
    audio = duration_tokens(seconds)
    return RequestSummary(model=ask.model, stream=ask.stream,
                          max_tokens=max(1, math.ceil(seconds / 60 * TRANSCRIPT_TOKENS_PER_MINUTE)),
                          prompt_tokens=estimator.text(ask.prompt) + audio,
                          other_ratios={MINUTES: minutes(seconds)} if per_call else {})


def token_usage(usage: Any) -> Usage | None:
    """A transcription's ``usage`` of ``type: tokens`` (or a speech stream's usage)."""
    if not isinstance(usage, dict):
        return None
    given, made = usage.get("input_tokens"), usage.get("output_tokens")
    if not (_count(given) and _count(made)):
        return None
    details = usage.get("input_token_details")
    audio = details.get("audio_tokens") if isinstance(details, dict) else None
    return Usage(input_tokens=given, output_tokens=made, audio_tokens=min(audio, given) if _count(audio) else 0)


def reported_seconds(answer: Any) -> float | None:
    """The audio's duration as a JSON answer reports it: ``usage`` of ``type: duration``,
    else a verbose or diarized answer's ``duration``."""
    if not isinstance(answer, dict):
        return None
    usage = answer.get("usage")
    for value in (usage.get("seconds") if isinstance(usage, dict) else None, answer.get("duration")):
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= MAX_SECONDS:
            return float(value)
    return None


def settle_transcription(ex: Exchange, answer: Any, measured: float) -> None:
    """Charge a transcription from its answer (a parsed JSON object, or None for text)."""
    assert ex.price is not None
    usage = token_usage(answer.get("usage")) if isinstance(answer, dict) else None
    seconds = reported_seconds(answer)
    if ex.price.model_price is not None:  # per minute of audio
        estimated = seconds is None
        billed = measured if seconds is None else seconds
        audio = duration_tokens(billed)
        ex.settle(usage or Usage(input_tokens=audio, audio_tokens=audio), end_reason="done", estimated=estimated,
                  other_ratios={MINUTES: minutes(billed)})
    elif usage is not None:
        ex.settle(usage, end_reason="done", other_ratios={})
    else:  # by token without tokens reported: the audio's duration in new-api's audio tokens
        audio = duration_tokens(measured if seconds is None else seconds)
        ex.settle(Usage(input_tokens=audio, audio_tokens=audio), end_reason="done", estimated=seconds is None,
                  other_ratios={})


# ---- speech -------------------------------------------------------------------------------
def speech_summary(ask: SpeechAsk) -> RequestSummary:
    """The characters as input; output reserved only where it can be reported (``sse``)."""
    output = SPEECH_TOKENS_PER_CHAR * ask.characters if ask.sse else 1
    return RequestSummary(model=ask.model, stream=ask.sse, max_tokens=max(1, output),
                          prompt_tokens=ask.characters)


def character_usage(ask: SpeechAsk) -> Usage:
    """What a speech answer without reported usage bills: one input token per character."""
    return Usage(input_tokens=ask.characters)


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS
