"""The requests of OpenAI's audio endpoints, checked field by field before anything goes
upstream: a transcription or translation form (``multipart/form-data`` with the audio in
``file``) and a speech body (JSON). Every field is OpenAI's (``CreateTranscriptionRequest``,
``CreateTranslationRequest``, ``CreateSpeechRequest``) with its type and bounds; anything
else is a 400 naming the field, in OpenAI's error shape."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from faregate.api import FilePart, Form, GatewayError, bad_request

TRANSCRIPTIONS = "audio_transcriptions"
TRANSLATIONS = "audio_translations"
SPEECH = "audio_speech"
#: new-api's models when a request names none
DEFAULT_STT_MODEL = "whisper-1"
DEFAULT_TTS_MODEL = "tts-1"
#: the upload formats OpenAI accepts, by file name extension
UPLOAD_FORMATS = frozenset({"flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"})
TEXT_FORMATS = frozenset({"text", "srt", "vtt"})
TRANSCRIPTION_FORMATS = frozenset({"json", "verbose_json", "diarized_json"}) | TEXT_FORMATS
TRANSLATION_FORMATS = frozenset({"json", "verbose_json"}) | TEXT_FORMATS
SPEECH_FORMATS = frozenset({"mp3", "opus", "aac", "flac", "wav", "pcm"})
#: OpenAI's limits: the speech input and instructions (characters), known speakers
MAX_SPEECH_CHARS = 4096
MAX_SPEAKERS = 4
#: the gateway's own bounds on free text (Whisper reads only the last 224 tokens of a prompt),
#: on ``keywords`` (words or phrases that guide the transcription) and ``languages`` (the
#: audio's possible languages)
MAX_PROMPT_CHARS = 8192
MAX_NAME_CHARS = 256
MAX_KEYWORDS = 32  # the form holds at most 64 parts in all (faregate.multipart)
MAX_LANGUAGES = 16
_LANGUAGE = re.compile(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})?")
#: ``chunking_strategy`` as the SDK sends an object (form fields ``chunking_strategy[...]``)
VAD_FIELDS = {"type": str, "prefix_padding_ms": int, "silence_duration_ms": int, "threshold": float}
_COMMON_FIELDS = frozenset({"file", "model", "prompt", "response_format", "temperature"})
TRANSCRIPTION_FIELDS = _COMMON_FIELDS | {
    "language", "stream", "chunking_strategy", "timestamp_granularities[]", "timestamp_granularities",
    "include[]", "include", "known_speaker_names[]", "known_speaker_references[]", "keywords[]", "keywords",
    "languages[]", "languages", *(f"chunking_strategy[{name}]" for name in VAD_FIELDS)}
#: the fields repeated on purpose (arrays); any other may appear once
LIST_FIELDS = frozenset({"timestamp_granularities[]", "timestamp_granularities", "include[]", "include",
                         "known_speaker_names[]", "known_speaker_references[]", "keywords[]", "keywords",
                         "languages[]", "languages"})


@dataclass(slots=True, frozen=True)
class TranscriptionAsk:
    """A checked transcription or translation: what billing and the answer need."""

    endpoint: str
    model: str
    response_format: str
    stream: bool
    prompt: str
    file: FilePart


@dataclass(slots=True, frozen=True)
class SpeechAsk:
    """A checked speech request."""

    model: str
    response_format: str
    sse: bool
    #: characters of ``input`` and ``instructions``: what a per-character price bills
    characters: int


# ---- transcriptions and translations ------------------------------------------------------
def transcription(form: Form, endpoint: str) -> TranscriptionAsk:
    """The form of a transcription (or a translation, with its smaller set of fields)."""
    allowed = TRANSCRIPTION_FIELDS if endpoint == TRANSCRIPTIONS else _COMMON_FIELDS
    for name, values in form.lists.items():
        if name not in allowed:
            raise bad_request(f"unknown field {name!r}", param=_param(name))
        if len(values) > 1 and name not in LIST_FIELDS:
            raise bad_request(f"{name} was given more than once", param=_param(name))
        if any(isinstance(v, FilePart) for v in values) != (name == "file"):
            what = "an uploaded file" if name == "file" else "a text field, not a file"
            raise bad_request(f"{name} must be {what}", param=_param(name))
    file = form.files.get("file")
    if file is None:
        raise bad_request("file is required: the audio to transcribe, as a multipart file part", param="file")
    if not file.data:
        raise bad_request("file is empty", param="file")
    extension = file.filename.rsplit(".", 1)[-1].lower() if "." in file.filename else ""
    if extension not in UPLOAD_FORMATS:
        raise bad_request(f"Invalid file format. Supported formats: {sorted(UPLOAD_FORMATS)}", param="file")
    fields = form.fields
    model = fields.get("model") or DEFAULT_STT_MODEL
    _bounded(model, "model", MAX_NAME_CHARS)
    prompt = fields.get("prompt", "")
    _bounded(prompt, "prompt", MAX_PROMPT_CHARS, empty=True)
    formats = TRANSCRIPTION_FORMATS if endpoint == TRANSCRIPTIONS else TRANSLATION_FORMATS
    response_format = fields.get("response_format", "json")
    if response_format not in formats:
        raise bad_request(f"response_format must be one of {sorted(formats)}", param="response_format")
    if response_format == "diarized_json" and "diarize" not in model:
        raise bad_request("response_format diarized_json needs a diarization model", param="response_format")
    if "temperature" in fields:
        _number(fields["temperature"], "temperature", 0.0, 1.0)
    stream = False
    if endpoint == TRANSCRIPTIONS:
        stream = _boolean(fields.get("stream", "false"), "stream")
        _transcription_options(form)
    return TranscriptionAsk(endpoint, model, response_format, stream, prompt, file)


def _transcription_options(form: Form) -> None:
    fields = form.fields
    language = fields.get("language")
    if language is not None and not _LANGUAGE.fullmatch(language):
        raise bad_request("language must be an ISO-639-1 code such as en", param="language")
    granularities = _values(form, "timestamp_granularities")
    if len(granularities) > 2 or len(set(granularities)) < len(granularities) or \
            not set(granularities) <= {"word", "segment"}:
        raise bad_request("timestamp_granularities holds word and/or segment, each at most once",
                          param="timestamp_granularities")
    if not set(_values(form, "include")) <= {"logprobs"}:
        raise bad_request("include may only hold logprobs", param="include")
    names = _values(form, "known_speaker_names")
    references = _values(form, "known_speaker_references")
    if len(names) > MAX_SPEAKERS or any(not 1 <= len(n) <= MAX_NAME_CHARS for n in names):
        raise bad_request(f"known_speaker_names holds at most {MAX_SPEAKERS} short names",
                          param="known_speaker_names")
    if len(references) > MAX_SPEAKERS or any(not r.startswith("data:") for r in references):
        raise bad_request(f"known_speaker_references holds at most {MAX_SPEAKERS} data URLs",
                          param="known_speaker_references")
    keywords = _values(form, "keywords")
    if len(keywords) > MAX_KEYWORDS or any(not 1 <= len(k) <= MAX_NAME_CHARS for k in keywords):
        raise bad_request(f"keywords holds at most {MAX_KEYWORDS} words or phrases of 1 to {MAX_NAME_CHARS} "
                          "characters", param="keywords")
    languages = _values(form, "languages")
    if len(languages) > MAX_LANGUAGES or not all(_LANGUAGE.fullmatch(code) for code in languages):
        raise bad_request(f"languages holds at most {MAX_LANGUAGES} ISO-639-1 codes such as en", param="languages")
    _chunking(form)


def _chunking(form: Form) -> None:
    """``chunking_strategy``: ``auto``, or server VAD settings as ``chunking_strategy[...]`` fields."""
    fields = form.fields
    vad = {name[len("chunking_strategy["):-1]: value for name, value in fields.items()
           if name.startswith("chunking_strategy[")}
    if "chunking_strategy" in fields:
        if vad or fields["chunking_strategy"] != "auto":
            raise bad_request("chunking_strategy must be auto or server_vad settings", param="chunking_strategy")
        return
    if not vad:
        return
    if vad.get("type") != "server_vad":
        raise bad_request("chunking_strategy[type] must be server_vad", param="chunking_strategy")
    for name in ("prefix_padding_ms", "silence_duration_ms"):
        if name in vad:
            _number(vad[name], "chunking_strategy", 0, 60_000, integer=True)
    if "threshold" in vad:
        _number(vad["threshold"], "chunking_strategy", 0.0, 1.0)


def _values(form: Form, name: str) -> list[str]:
    """A list field's values, sent as ``name[]`` (the SDKs) or ``name`` repeated."""
    return [v for key in (f"{name}[]", name) for v in form.lists.get(key, ()) if isinstance(v, str)]


def _param(name: str) -> str:
    return name.split("[", 1)[0]


# ---- speech -----------------------------------------------------------------------------
SPEECH_FIELDS = frozenset({"model", "input", "voice", "instructions", "response_format", "speed", "stream_format"})


def speech(body: dict[str, Any]) -> SpeechAsk:
    """A speech body: ``input`` (at most 4096 characters) and ``voice`` required."""
    for name in body:
        if name not in SPEECH_FIELDS:
            raise bad_request(f"unknown field {name!r}", param=name)
    model = body.get("model", DEFAULT_TTS_MODEL)
    if not isinstance(model, str):
        raise bad_request("model must be a string", param="model")
    model = model or DEFAULT_TTS_MODEL
    _bounded(model, "model", MAX_NAME_CHARS)
    text = body.get("input")
    if not isinstance(text, str) or not text:
        raise bad_request("input is required: the text to speak", param="input")
    _bounded(text, "input", MAX_SPEECH_CHARS)
    instructions = body.get("instructions", "")
    if not isinstance(instructions, str):
        raise bad_request("instructions must be a string", param="instructions")
    _bounded(instructions, "instructions", MAX_SPEECH_CHARS, empty=True)
    voice = body.get("voice")
    if isinstance(voice, dict) and set(voice) == {"id"}:
        voice = voice["id"]
    if not isinstance(voice, str) or not voice:
        raise bad_request("voice is required: a voice name or {\"id\": ...}", param="voice")
    _bounded(voice, "voice", MAX_NAME_CHARS)
    response_format = body.get("response_format", "mp3")
    if response_format not in SPEECH_FORMATS:
        raise bad_request(f"response_format must be one of {sorted(SPEECH_FORMATS)}", param="response_format")
    if "speed" in body:
        speed = body["speed"]
        if isinstance(speed, bool) or not isinstance(speed, int | float) or not 0.25 <= speed <= 4.0:
            raise bad_request("speed must be a number from 0.25 to 4.0", param="speed")
    stream_format = body.get("stream_format", "audio")
    if stream_format not in ("audio", "sse"):
        raise bad_request("stream_format must be audio or sse", param="stream_format")
    return SpeechAsk(model, response_format, stream_format == "sse", len(text) + len(instructions))


# ---- scalars ------------------------------------------------------------------------------
def _bounded(value: str, name: str, limit: int, *, empty: bool = False) -> None:
    if len(value) > limit or (not value and not empty):
        raise bad_request(f"{name} must be a string of {0 if empty else 1} to {limit} characters", param=name)


def _number(text: str, name: str, low: float, high: float, *, integer: bool = False) -> float:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise bad_request(f"{name} must be a number", param=name) from None
    if not math.isfinite(value) or not low <= value <= high:
        raise bad_request(f"{name} must be from {low:g} to {high:g}", param=name)
    return value


def _boolean(text: str, name: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise bad_request(f"{name} must be true or false", param=name)
    return text.lower() == "true"


def not_multipart() -> GatewayError:
    return bad_request("request body must be multipart/form-data with the audio in the file field",
                       code="bad_request_body", param="file")
