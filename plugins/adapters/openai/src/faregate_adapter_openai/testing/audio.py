"""The fake OpenAI's audio endpoints: ``POST /v1/audio/transcriptions``,
``/v1/audio/translations`` (multipart) and ``/v1/audio/speech`` (JSON).

Requests are checked against OpenAI's published components: a form is turned into a
dict as OpenAI reads it (file parts as the string ``<file NAME (TYPE, N bytes)>``,
``name[]`` parts gathered into a list, ``name[key]`` parts into an object, numbers and
booleans typed as the schema declares them) and validated against
``CreateTranscriptionRequest`` / ``CreateTranslationRequest``; a speech body against
``CreateSpeechRequest``. The form is parsed with the standard library's MIME parser,
independently of the gateway's own.

Answers (deterministic, from the request): a transcript naming the seconds heard (a WAV
upload's own duration, else its size at 16,000 bytes a second), the file and the model,
in every ``response_format``; whisper models report ``usage`` by duration (whole
seconds), the others by tokens (:func:`token_usage`). ``stream`` (not whisper) answers
``transcript.text.delta`` events then ``transcript.text.done`` with usage. Speech answers
real audio of the asked format where the standard library can make it (WAV, PCM, silent
MP3 frames, a FLAC header; opus and aac are marker bytes), :data:`SPEECH_SECONDS_PER_CHAR`
seconds per input character, in :attr:`AudioKnobs.chunks` chunks; ``stream_format: sse``
(not tts-1 / tts-1-hd, as OpenAI) answers ``speech.audio.delta`` events then
``speech.audio.done`` with usage. :class:`AudioKnobs` (``fake.audio``) turns usage off and
holds a speech answer after its first chunk until a test releases it."""

from __future__ import annotations

import asyncio
import base64
import email.message
import email.parser
import email.policy
import io
import math
import struct
import wave
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from faregate.testing.fake_server import Request, Response
from faregate_adapter_openai.testing.errors import error_body

if TYPE_CHECKING:
    from faregate_adapter_openai.testing.server import FakeOpenAI

TRANSCRIPTIONS_PATH = "/v1/audio/transcriptions"
TRANSLATIONS_PATH = "/v1/audio/translations"
SPEECH_PATH = "/v1/audio/speech"
SCHEMAS = {TRANSCRIPTIONS_PATH: "CreateTranscriptionRequest", TRANSLATIONS_PATH: "CreateTranslationRequest",
           SPEECH_PATH: "CreateSpeechRequest"}
PATHS = frozenset(SCHEMAS)
#: the rate an upload whose duration the fake cannot read is taken at (bytes a second)
BYTES_PER_SECOND = 16_000
SPEECH_SECONDS_PER_CHAR = 0.004
SAMPLE_RATE = 24_000  # OpenAI's speech PCM: 24 kHz, 16-bit, mono
SPEECH_TYPES = {"mp3": b"audio/mpeg", "opus": b"audio/opus", "aac": b"audio/aac", "flac": b"audio/flac",
                "wav": b"audio/wav", "pcm": b"audio/pcm"}
TEXT = b"text/plain; charset=utf-8"
#: a silent MPEG-1 Layer III frame (128 kbit/s, 44.1 kHz, mono): 1152 samples
MP3_FRAME = bytes([0xFF, 0xFB, 0x90, 0xC4]) + bytes(413)
MP3_FRAME_SECONDS = 1152 / 44_100


@dataclass
class AudioKnobs:
    """What a test can change about the fake's audio answers."""

    #: report ``usage`` (and nothing else changes)
    usage: bool = True
    #: speech: the chunks the audio is sent in
    chunks: int = 4
    #: speech: when set, the answer waits for it after its first chunk
    gate: asyncio.Event | None = None


# ---- reading requests ---------------------------------------------------------------------
def form_parts(request: Request) -> list[tuple[str, str | None, str, bytes]] | None:
    """``(name, filename, content type, data)`` per part of a multipart body, None when
    the body is not multipart/form-data."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() != "multipart/form-data":
        return None
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + request.body)
    if not message.is_multipart():
        return None
    parts = []
    for part in message.iter_parts():
        assert isinstance(part, email.message.EmailMessage)
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            return None
        payload = part.get_payload(decode=True)
        parts.append((name, part.get_filename(), part.get_content_type(),
                      payload if isinstance(payload, bytes) else b""))
    return parts


def form_document(parts: list[tuple[str, str | None, str, bytes]], component: str) -> dict[str, Any] | None:
    """The form as the dict OpenAI validates (see the module docstring); None when a plain
    field is given twice."""
    from faregate_adapter_openai.testing.schema import load_spec  # needs faregate[testing]

    schemas = load_spec()
    schemas = schemas.get("components", {}).get("schemas", schemas)
    properties = schemas[component]["properties"]
    doc: dict[str, Any] = {}
    for name, filename, kind, data in parts:
        value: Any = (f"<file {filename} ({kind}, {len(data)} bytes)>" if filename is not None
                      else data.decode("utf-8", "replace"))
        if name.endswith("[]"):
            doc.setdefault(name[:-2], []).append(value)
        elif "[" in name and name.endswith("]"):  # an object's member: chunking_strategy[type]
            outer, key = name[:-1].split("[", 1)
            member = doc.setdefault(outer, {})
            if not isinstance(member, dict):
                return None
            member[key] = _typed(value, schemas["VadConfig"]["properties"].get(key, {}), schemas)
        elif name in doc:
            return None
        else:
            doc[name] = _typed(value, properties.get(name, {}), schemas)
    return doc


def _types(schema: dict[str, Any], schemas: dict[str, Any], depth: int = 0) -> set[str]:
    """Every JSON type a (sub)schema allows, following ``$ref`` and ``anyOf`` / ``oneOf``."""
    if depth > 8:
        return set()
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _types(schemas[ref.rsplit("/", 1)[-1]], schemas, depth + 1)
    found = {schema["type"]} if isinstance(schema.get("type"), str) else set()
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key, ()):
            found |= _types(sub, schemas, depth + 1)
    return found


def _typed(value: Any, schema: dict[str, Any], schemas: dict[str, Any]) -> Any:
    """A text field as the schema types it (a value that does not parse stays text, so
    validation refuses it)."""
    if not isinstance(value, str):
        return value
    types = _types(schema, schemas)
    if "boolean" in types and value in ("true", "false"):
        return value == "true"
    try:
        if "integer" in types and value.lstrip("-").isdigit():
            return int(value)
        if "number" in types:
            number = float(value)
            return number if math.isfinite(number) else value
    except ValueError:
        pass
    return value


def request_document(request: Request) -> Any:
    """The request as OpenAI validates it (cached in ``request.json``): JSON as sent, a
    form as a dict; None when it is neither."""
    if request.json is None and request.path in (TRANSCRIPTIONS_PATH, TRANSLATIONS_PATH):
        parts = form_parts(request)
        request.json = form_document(parts, SCHEMAS[request.path]) if parts is not None else None
    return request.json


def problem(request: Request) -> str | None:
    """Why an audio request breaks OpenAI's schema, None when it does not."""
    from faregate_adapter_openai.testing.schema import request_errors  # needs faregate[testing]

    body = request_document(request)
    if body is None:
        return "the body is not " + ("JSON" if request.path == SPEECH_PATH else "multipart/form-data")
    return request_errors(body, SCHEMAS[request.path])


# ---- transcriptions and translations ---------------------------------------------------------
def upload_seconds(data: bytes) -> float:
    """A WAV upload's duration, else its size at :data:`BYTES_PER_SECOND`."""
    try:
        with wave.open(io.BytesIO(data)) as audio:
            return float(audio.getnframes() / audio.getframerate())
    except (wave.Error, EOFError, ZeroDivisionError):
        return max(1.0, len(data) / BYTES_PER_SECOND)


def transcript(doc: dict[str, Any], filename: str, seconds: float, translate: bool) -> str:
    verb = "Translated" if translate else "Transcribed"
    return f"{verb} {seconds:.2f} seconds of {filename} with {doc.get('model')}"


def token_usage(doc: dict[str, Any], seconds: float, text: str) -> dict[str, Any]:
    """A gpt-4o transcription's usage: 10 audio tokens a second, a token per prompt word in
    and per transcript word out."""
    audio = math.ceil(seconds * 10)
    prompt = len(str(doc.get("prompt", "")).split())
    output = len(text.split())
    return {"type": "tokens", "input_tokens": audio + prompt,
            "input_token_details": {"text_tokens": prompt, "audio_tokens": audio},
            "output_tokens": output, "total_tokens": audio + prompt + output}


def _clock(seconds: float, sep: str) -> str:
    millis = round(seconds * 1000)
    return f"{millis // 3_600_000:02d}:{millis // 60_000 % 60:02d}:{millis // 1000 % 60:02d}{sep}{millis % 1000:03d}"


def transcription_answer(doc: dict[str, Any], text: str, seconds: float, translate: bool,
                         knobs: AudioKnobs) -> tuple[bytes, bytes]:
    """The body and content type of a whole answer in the asked ``response_format``."""
    fmt = doc.get("response_format", "json")
    whisper = str(doc.get("model", "")).startswith("whisper")
    duration_usage = {"type": "duration", "seconds": math.ceil(seconds)}
    usage = duration_usage if whisper else token_usage(doc, seconds, text)
    if fmt == "text":
        return text.encode() + b"\n", TEXT
    if fmt == "srt":
        return f"1\n{_clock(0, ',')} --> {_clock(seconds, ',')}\n{text}\n\n".encode(), TEXT
    if fmt == "vtt":
        return f"WEBVTT\n\n{_clock(0, '.')} --> {_clock(seconds, '.')}\n{text}\n\n".encode(), TEXT
    answer: dict[str, Any] = {"text": text}
    if fmt == "verbose_json":
        answer = {"task": "translate" if translate else "transcribe", "language": "english", "duration": seconds,
                  "text": text, "segments": [{
                      "id": 0, "seek": 0, "start": 0.0, "end": seconds, "text": text,
                      "tokens": [50364 + i for i in range(len(text.split()))], "temperature": 0.0,
                      "avg_logprob": -0.25, "compression_ratio": 1.2, "no_speech_prob": 0.01}]}
        if "word" in doc.get("timestamp_granularities", ()):
            step = seconds / max(1, len(text.split()))
            answer["words"] = [{"word": w, "start": i * step, "end": (i + 1) * step}
                               for i, w in enumerate(text.split())]
        usage = duration_usage
    elif fmt == "diarized_json":
        answer = {"task": "transcribe", "duration": seconds, "text": text, "segments": [{
            "type": "transcript.text.segment", "id": "seg_0", "start": 0.0, "end": seconds, "text": text,
            "speaker": "A"}]}
    elif "logprobs" in doc.get("include", ()):
        answer["logprobs"] = [{"token": w, "logprob": -0.1, "bytes": list(w.encode())} for w in text.split()]
    if knobs.usage and not (translate and fmt == "json"):
        answer["usage"] = usage
    return orjson.dumps(answer), b"application/json"


def transcript_frames(doc: dict[str, Any], text: str, seconds: float, knobs: AudioKnobs) -> list[bytes]:
    """A streamed transcription: one delta per word, then the whole text with usage."""
    words = text.split()
    frames = [_sse({"type": "transcript.text.delta", "delta": (" " if i else "") + w}) for i, w in enumerate(words)]
    done: dict[str, Any] = {"type": "transcript.text.done", "text": text}
    if knobs.usage:
        done["usage"] = token_usage(doc, seconds, text)
    return [*frames, _sse(done)]


async def transcribe(fake: FakeOpenAI, request: Request, response: Response) -> None:
    doc = request.json
    parts = form_parts(request) or []
    upload = next(p for p in parts if p[0] == "file")
    seconds = upload_seconds(upload[3])
    translate = request.path == TRANSLATIONS_PATH
    text = transcript(doc, upload[1] or "", seconds, translate)
    if doc.get("stream") is True and not str(doc.get("model", "")).startswith("whisper"):
        return await response.stream(transcript_frames(doc, text, seconds, fake.audio))
    body, content_type = transcription_answer(doc, text, seconds, translate, fake.audio)
    await response.reply(200, body, content_type)


# ---- speech -------------------------------------------------------------------------------
def speech_audio(fmt: str, seconds: float) -> bytes:
    """``seconds`` of silence as a file of ``fmt`` (see the module docstring)."""
    frames = max(1, round(seconds * SAMPLE_RATE))
    samples = bytes(2 * frames)
    if fmt == "pcm":
        return samples
    if fmt == "wav":
        out = io.BytesIO()
        with wave.open(out, "wb") as audio:
            audio.setnchannels(1)
            audio.setsampwidth(2)
            audio.setframerate(SAMPLE_RATE)
            audio.writeframes(samples)
        return out.getvalue()
    if fmt == "mp3":
        return MP3_FRAME * max(1, round(seconds / MP3_FRAME_SECONDS))
    if fmt == "flac":  # the STREAMINFO header alone: 24 kHz, mono, 16-bit, the frame count
        info = (SAMPLE_RATE << 44) | (15 << 36) | frames
        return b"fLaC\x80\x00\x00\x22" + struct.pack(">HH", 4096, 4096) + bytes(6) + info.to_bytes(8, "big") \
            + bytes(16)
    return f"fake {fmt} audio, {seconds:.3f} s".encode()


def speech_usage(doc: dict[str, Any], audio: bytes) -> dict[str, int]:
    """A speech stream's usage: a token per input word, an audio token per 1,000 bytes."""
    given = len(str(doc.get("input", "")).split())
    made = max(1, len(audio) // 1000)
    return {"input_tokens": given, "output_tokens": made, "total_tokens": given + made}


def _chunks(data: bytes, count: int) -> list[bytes]:
    size = max(1, math.ceil(len(data) / max(1, count)))
    return [data[i:i + size] for i in range(0, len(data), size)]


async def speak(fake: FakeOpenAI, request: Request, response: Response) -> None:
    doc = request.json
    fmt = doc.get("response_format", "mp3")
    audio = speech_audio(fmt, len(doc["input"]) * SPEECH_SECONDS_PER_CHAR)
    chunks = _chunks(audio, fake.audio.chunks)
    if doc.get("stream_format") == "sse":
        if doc["model"] in ("tts-1", "tts-1-hd"):
            return response.send(400, error_body(400, f"stream_format sse is not supported for {doc['model']}",
                                                 type="invalid_request_error", param="stream_format"))
        done: dict[str, Any] = {"type": "speech.audio.done"}
        if fake.audio.usage:
            done["usage"] = speech_usage(doc, audio)
        frames = [_sse({"type": "speech.audio.delta", "audio": base64.b64encode(c).decode()}) for c in chunks]
        return await response.stream([*frames, _sse(done)])
    content_type = SPEECH_TYPES[fmt]
    gate = fake.audio.gate
    if gate is None:
        return await response.stream(chunks, content_type, extra=())
    response.write(response.head(200, content_type, None))
    response.write(response.frame(chunks[0]))
    await response.drain()
    await gate.wait()
    response.write(b"".join(response.frame(c) for c in chunks[1:]) + response.end())


def _sse(event: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"


async def answer(fake: FakeOpenAI, request: Request, response: Response) -> None:
    """An audio request: refused as OpenAI would (its schema), else answered."""
    doc = request_document(request)
    for record in reversed(fake.requests):  # what tests read of a form: the dict OpenAI validates
        if record["body"] is request.body:
            record["json"] = doc
            break
    violation = fake.check_request(request)
    if violation is not None:
        return response.send(400, error_body(400, f"Invalid request: {violation}", type="invalid_request_error",
                                             code="invalid_request_schema"))
    if request.path == SPEECH_PATH:
        return await speak(fake, request, response)
    await transcribe(fake, request, response)
