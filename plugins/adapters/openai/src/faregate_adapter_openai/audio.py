"""OpenAI's audio endpoints through the gateway, as new-api serves them:

* ``POST /v1/audio/transcriptions`` (endpoint kind ``audio_transcriptions``) and ``POST
  /v1/audio/translations`` (``audio_translations``): a ``multipart/form-data`` upload (at
  most OpenAI's 25 MB); no model: new-api's ``whisper-1``. The form goes upstream as the
  client sent it (its bytes and content type), re-encoded only when the channel maps the
  model or the default fills it in. The answer comes back with the upstream's content
  type: JSON for ``json`` / ``verbose_json`` / ``diarized_json``, text for ``text`` /
  ``srt`` / ``vtt``; with ``stream`` the upstream's ``transcript.text.*`` events.
* ``POST /v1/audio/speech`` (``audio_speech``): JSON; no model: ``tts-1``. The audio is
  relayed to the client as it arrives, with the upstream's content type; with
  ``stream_format: sse`` the upstream's ``speech.audio.*`` events.

Billing: :mod:`faregate_adapter_openai.audio_billing`."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from faregate.api import (
    AttemptFailed,
    Exchange,
    Form,
    GatewayError,
    JSONDecodeError,
    Outcome,
    Provider,
    Route,
    UpstreamRequest,
    UpstreamTarget,
    is_multipart,
    json_loads,
    stream_outcome,
)
from faregate_adapter_openai import audio_billing, audio_requests
from faregate_adapter_openai.audio_requests import SPEECH, TRANSCRIPTIONS, TRANSLATIONS, SpeechAsk, TranscriptionAsk
from faregate_adapter_openai.audio_stream import SPEECH_DONE, TRANSCRIPT_DONE, AudioEvents, binary_stream, first_chunk

#: OpenAI's upload limit for transcriptions and translations (the form's fields fit in its slack)
UPLOAD_MAX_BODY_MB = 25.0
#: a speech body is a little JSON: 4096 characters of input and of instructions, a few options
SPEECH_MAX_BODY_MB = 0.25
ROUTES = [
    Route("POST", "/v1/audio/transcriptions", kind=TRANSCRIPTIONS, max_body_mb=UPLOAD_MAX_BODY_MB),
    Route("POST", "/v1/audio/translations", kind=TRANSLATIONS, max_body_mb=UPLOAD_MAX_BODY_MB),
    Route("POST", "/v1/audio/speech", kind=SPEECH, max_body_mb=SPEECH_MAX_BODY_MB),
]
#: what an exchange keeps for its attempts (``Exchange.extra``)
ASK_KEY = "openai.audio.ask"
UPLOAD_KEY = "openai.audio.upload"
#: the largest transcript read from an upstream (a day of speech is a few MB of text)
MAX_ANSWER_BYTES = 32 << 20
_MEDIA_TYPE = re.compile(r"[A-Za-z0-9.+-]{1,64}/[A-Za-z0-9.+-]{1,64}(\s*;\s*charset=[A-Za-z0-9_-]{1,32})?")
SPEECH_TYPES = {"mp3": "audio/mpeg", "opus": "audio/opus", "aac": "audio/aac", "flac": "audio/flac",
                "wav": "audio/wav", "pcm": "audio/pcm"}


@runtime_checkable
class AudioEndpointProvider(Protocol):
    """What a provider offers to serve the audio endpoints (besides declaring them in
    ``endpoints``): multipart uploads and JSON bodies to an endpoint's upstream path."""

    def build_json(self, endpoint: str, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest:
        ...

    def build_form(self, endpoint: str, payload: bytes, content_type: str, target: UpstreamTarget) -> UpstreamRequest:
        ...


@dataclass(slots=True, frozen=True)
class Upload:
    """A transcription form as received, and the seconds of audio it holds (read from the
    file, else estimated from its size)."""

    form: Form
    content_type: str
    seconds: float


def content_type(upstream: str | None, default: str) -> str:
    """The upstream's content type when it is a plain media type, else ``default``."""
    value = (upstream or "").strip()
    return value if _MEDIA_TYPE.fullmatch(value) else default


def media(resp: Any) -> str:
    return str(resp.headers.get("content-type") or "").split(";", 1)[0].strip().lower()


class AudioOperation:
    """One attempt of an audio endpoint: the request up, the answer down, settled."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    def serves(self, provider: Provider, channel_type: int) -> bool:
        return provider.serves(self.endpoint, channel_type) and isinstance(provider, AudioEndpointProvider)

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        assert isinstance(provider, AudioEndpointProvider)
        upload = ex.extra.get(UPLOAD_KEY)
        if not isinstance(upload, Upload):  # speech: the client's body unless the model changes
            if ex.body.get("model") == target.model:
                return provider.build_json(self.endpoint, ex.body, ex.raw, target)
            return provider.build_json(self.endpoint, {**ex.body, "model": target.model}, b"", target)
        if upload.form.fields.get("model") == target.model:
            return provider.build_form(self.endpoint, ex.raw, upload.content_type, target)
        payload, form_type = upload.form.with_field("model", target.model).encode()
        return provider.build_form(self.endpoint, payload, form_type, target)

    async def finish(self, ex: Exchange, provider: Provider, resp: Any, passthrough: bool) -> Outcome:
        ask = ex.extra[ASK_KEY]
        if isinstance(ask, SpeechAsk):
            return await self._speech(ex, provider, resp, ask)
        assert isinstance(ask, TranscriptionAsk)
        upload = ex.extra[UPLOAD_KEY]
        per_call = ex.price is not None and ex.price.model_price is not None
        if ask.stream and media(resp) == "text/event-stream":  # whisper-1 ignores stream: a whole answer
            ratios = {audio_billing.MINUTES: audio_billing.minutes(upload.seconds)} if per_call else None
            return await stream_outcome(ex, provider, resp, True, AudioEvents(TRANSCRIPT_DONE, None, ratios))
        body = await _read_all(ex, resp)
        answer = None
        if ask.response_format in audio_requests.TEXT_FORMATS:
            default = "text/plain; charset=utf-8"
            try:
                body.decode("utf-8")
            except UnicodeDecodeError:
                raise AttemptFailed(_malformed(ask.endpoint)) from None
        else:
            default = "application/json"
            try:
                answer = json_loads(body)
            except JSONDecodeError:
                answer = None
            if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
                raise AttemptFailed(_malformed(ask.endpoint))
        audio_billing.settle_transcription(ex, answer, upload.seconds)
        outcome = ex.raw_json(body)
        outcome.content_type = content_type(resp.headers.get("content-type"), default)
        return outcome

    async def _speech(self, ex: Exchange, provider: Provider, resp: Any, ask: SpeechAsk) -> Outcome:
        kind = media(resp)
        if kind == "text/event-stream":
            events = AudioEvents(SPEECH_DONE, audio_billing.character_usage(ask))
            return await stream_outcome(ex, provider, resp, True, events)
        if kind and not kind.startswith("audio/") and kind != "application/octet-stream":
            await resp.aclose()  # a 200 that is not audio (a proxy's page, an error as JSON)
            raise AttemptFailed(GatewayError(502, "upstream sent no audio", code="bad_response_body", upstream=True))
        head = await first_chunk(ex, resp)

        def charge(end_reason: str) -> None:
            ex.settle(audio_billing.character_usage(ask), end_reason=end_reason, estimated=True)

        outcome = ex.raw_json(b"")
        outcome.content_type = content_type(resp.headers.get("content-type"), SPEECH_TYPES[ask.response_format])
        outcome.stream = binary_stream(ex, resp, head, charge)
        return outcome


async def _read_all(ex: Exchange, resp: Any) -> bytes:
    """A whole answer (at most :data:`MAX_ANSWER_BYTES`); a failed read is a failed attempt."""
    received = bytearray()
    try:
        while chunk := await resp.read_chunk():
            received += chunk
            if len(received) > MAX_ANSWER_BYTES:
                raise AttemptFailed(GatewayError(502, "upstream answer too large", code="bad_response_body",
                                                 upstream=True))
    except AttemptFailed:
        raise
    except Exception:  # noqa: BLE001 - the transport's own error types
        raise AttemptFailed(GatewayError(502, "upstream closed the connection mid-response",
                                         code="read_response_body_failed", upstream=True)) from None
    finally:
        await resp.aclose()
    ex.upstream_seconds += time.perf_counter() - ex.answer_at
    ex.answer_at = 0.0
    return bytes(received)


def _malformed(endpoint: str) -> GatewayError:
    return GatewayError(502, f"upstream sent a malformed {endpoint} answer", code="bad_response_body", upstream=True)


class AudioDriver:
    """Routes of one audio kind: authenticate, read (a form, or JSON for speech), check,
    measure the upload, admit, relay."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.operation = AudioOperation(kind)

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        if self.kind == SPEECH:
            raw, body = await ex.read_json()
            speech = audio_requests.speech(body)
            ex.extra[ASK_KEY] = speech
            ex.check_prompt(body["input"])  # the sensitive-word check (checked a string above)
            ex.begin(audio_billing.speech_summary(speech), body, raw)
        else:
            form_type = ex.headers.get("content-type") or ""
            if not is_multipart(form_type):
                raise audio_requests.not_multipart()
            form = await ex.read_form()
            ask = audio_requests.transcription(form, self.kind)
            if "model" not in form.fields:  # the default model, encoded once (megabytes: off the loop)
                form = form.with_field("model", ask.model)
                ex.raw, form_type = await asyncio.to_thread(form.encode)
            # reading the file's headers is parsing: off the event loop
            seconds = await asyncio.to_thread(audio_billing.read_duration, ask.file.data)
            if seconds is None:
                seconds = audio_billing.size_seconds(len(ask.file.data))
            ex.extra[ASK_KEY] = ask
            ex.extra[UPLOAD_KEY] = Upload(form, form_type, seconds)
            summary = audio_billing.transcription_summary(ask, seconds, audio_billing.per_minute(ex, ask.model))
            ex.begin(summary, dict(form.fields), ex.raw)
        await ex.admit(self.operation)
        return await ex.relay(self.operation)


def drivers() -> list[AudioDriver]:
    return [AudioDriver(TRANSCRIPTIONS), AudioDriver(TRANSLATIONS), AudioDriver(SPEECH)]
