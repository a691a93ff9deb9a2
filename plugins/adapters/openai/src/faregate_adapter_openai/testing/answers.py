"""Every answer of the OpenAI family's endpoints held to its published shape, as the bytes
a client received: OpenAI's OpenAPI schema (:mod:`.schema`) wherever it has one, the
shapes new-api documents for rerank and the legacy billing pair, Codex's for alpha search
(:data:`.alpha_search.ANSWER_SCHEMA`), OpenAI's ``ErrorResponse`` for every error.

For clients that cannot validate strictly themselves: the Node SDK has no strict mode, and
the Python SDK's own types refuse three answers OpenAI's spec allows — base64 embeddings
(typed as floats, checked before the SDK decodes them), streamed completions (a null
finish reason in every chunk but the last) and a compaction's kept user messages (typed
as output items). Usage::

    recorder = Recorder()
    sdk = openai.AsyncOpenAI(..., http_client=httpx.AsyncClient(transport=recorder.async_transport()))
    ...  # any calls, streamed or not
    recorder.check()  # every answer received, validated (raises jsonschema.ValidationError)

or ``check_answer(answer_of(raw.http_response))`` for one answer read whole.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from faregate_adapter_openai.testing import alpha_search
from faregate_adapter_openai.testing.schema import ValidationError, validate

__all__ = ["Answer", "Recorder", "answer_of", "check_answer", "decode_embeddings", "events_of"]

#: new-api's RerankResponse (``dto.RerankResponse``): results of index, score and the
#: upstream's document, and a usage of prompt tokens only
RERANK_ANSWER: dict[str, Any] = {
    "type": "object",
    "required": ["results", "usage"],
    "additionalProperties": False,
    "properties": {
        "results": {"type": "array", "items": {
            "type": "object",
            "required": ["index", "relevance_score"],
            "additionalProperties": False,
            "properties": {"index": {"type": "integer", "minimum": 0}, "relevance_score": {"type": "number"},
                           "document": {"type": ["string", "object"]}}}},
        "usage": {"type": "object", "required": ["prompt_tokens", "completion_tokens", "total_tokens"],
                  "properties": {name: {"type": "integer", "minimum": 0}
                                 for name in ("prompt_tokens", "completion_tokens", "total_tokens")}},
    },
}
_AMOUNT = {"type": "number", "minimum": 0}
#: OpenAI's legacy ``GET /dashboard/billing/subscription`` as new-api answers it
BILLING_SUBSCRIPTION: dict[str, Any] = {
    "type": "object",
    "required": ["object", "has_payment_method", "soft_limit_usd", "hard_limit_usd", "system_hard_limit_usd",
                 "access_until"],
    "additionalProperties": False,
    "properties": {"object": {"const": "billing_subscription"}, "has_payment_method": {"type": "boolean"},
                   "soft_limit_usd": _AMOUNT, "hard_limit_usd": _AMOUNT, "system_hard_limit_usd": _AMOUNT,
                   "access_until": {"type": "integer", "minimum": 0}},
}
#: ``GET /dashboard/billing/usage``: what was spent, in cents
BILLING_USAGE: dict[str, Any] = {
    "type": "object",
    "required": ["object", "total_usage"],
    "additionalProperties": False,
    "properties": {"object": {"const": "list"}, "total_usage": _AMOUNT},
}


@dataclass
class Answer:
    """One answer as received: ``body`` grows while a recorded stream is read."""

    method: str
    path: str
    status: int
    content_type: str
    body: bytearray = field(default_factory=bytearray)
    encoding: str = ""

    def data(self) -> bytes:
        """The body with its ``Content-Encoding`` undone (what the client's parser saw)."""
        raw = bytes(self.body)
        if self.encoding in ("gzip", "deflate"):
            return zlib.decompress(raw, 47)  # 47: a gzip or zlib header, detected
        if self.encoding not in ("", "identity"):
            raise AssertionError(f"{self.method} {self.path}: unexpected Content-Encoding {self.encoding}")
        return raw


def answer_of(response: httpx.Response) -> Answer:
    """An answer already read whole (``with_raw_response``'s ``http_response``, httpx's)."""
    return Answer(response.request.method, response.request.url.path, response.status_code,
                  response.headers.get("content-type", ""), bytearray(response.content))


# ---- validators ------------------------------------------------------------------------------

def _validator(schema: dict[str, Any]) -> Callable[[Any], Any]:
    # jsonschema comes with the testing extra, as the spec's validators do
    import jsonschema

    checker = jsonschema.Draft202012Validator(schema)

    def check(obj: Any) -> Any:
        error = jsonschema.exceptions.best_match(checker.iter_errors(obj))
        if error is not None:
            raise error
        return obj

    return check


def _spec(component: str) -> Callable[[Any], Any]:
    return lambda obj: validate(component, obj)


def decode_embeddings(obj: Any) -> Any:
    """``obj`` with each base64 embedding (little-endian float32, what the SDKs ask for by
    default) decoded to its floats, as the SDKs decode it; a value that is not such an
    encoding fails."""
    if not isinstance(obj, dict) or not isinstance(obj.get("data"), list):
        return obj
    data = []
    for item in obj["data"]:
        if isinstance(item, dict) and isinstance(item.get("embedding"), str):
            try:
                raw = base64.b64decode(item["embedding"], validate=True)
            except binascii.Error as exc:
                raise AssertionError(f"embedding {item.get('index')}: not base64: {exc}") from None
            if not raw or len(raw) % 4:
                raise AssertionError(f"embedding {item.get('index')}: {len(raw)} bytes is not float32s")
            item = {**item, "embedding": list(struct.unpack(f"<{len(raw) // 4}f", raw))}
        data.append(item)
    return {**obj, "data": data}


def _embeddings(obj: Any) -> Any:
    return validate("CreateEmbeddingResponse", decode_embeddings(obj))


def _one_of(*components: str) -> Callable[[Any], Any]:
    """The first component ``obj`` is valid against (the spec's ``oneOf`` of a path's answers,
    say a transcription's json or verbose_json), else the first one's error."""
    def check(obj: Any) -> Any:
        first: ValidationError | None = None
        for component in components:
            try:
                return validate(component, obj)
            except ValidationError as exc:
                first = first or exc
        assert first is not None
        raise first

    return check


def _completion_chunk(obj: Any) -> Any:
    """A streamed ``text_completion`` vs ``CreateCompletionResponse``: the spec has no chunk type
    of its own; a chunk's finish reason is null but in the last, its usage null but in the
    usage chunk (OpenAI's own stream, which the Python SDK's type refuses)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("choices"), list):
        return validate("CreateCompletionResponse", obj)
    checked = dict(obj)
    checked["choices"] = [{**c, "finish_reason": c.get("finish_reason") or "stop"} if isinstance(c, dict) else c
                          for c in obj["choices"]]
    if "usage" in checked and checked["usage"] is None:
        del checked["usage"]
    return validate("CreateCompletionResponse", checked)


def _numbered(component: str) -> Callable[[list[Any]], Any]:
    """Each event valid, ``sequence_number`` 0, 1, 2 … (the Responses API's streams)."""
    def check(events: list[Any]) -> Any:
        for n, event in enumerate(events):
            validate(component, event)
            assert event["sequence_number"] == n, f"event {n} numbered {event['sequence_number']}"
        return events

    return check


def _each(check_one: Callable[[Any], Any]) -> Callable[[list[Any]], Any]:
    def check(events: list[Any]) -> Any:
        if not events:
            raise AssertionError("a stream without events")
        for event in events:
            check_one(event)
        return events

    return check


@dataclass(frozen=True)
class _Endpoint:
    """How one path answers: a JSON object, an SSE stream of JSON events, or another media
    type (a transcription's text, speech audio)."""

    pattern: re.Pattern[str]
    json: Callable[[Any], Any] | None = None
    stream: Callable[[list[Any]], Any] | None = None
    media: tuple[str, ...] = ()


def _at(path: str, **how: Any) -> _Endpoint:
    return _Endpoint(re.compile(path), **how)


_ENDPOINTS = (
    _at(r"/v1/chat/completions", json=_spec("CreateChatCompletionResponse"),
        stream=_each(_spec("CreateChatCompletionStreamResponse"))),
    _at(r"/v1/completions", json=_spec("CreateCompletionResponse"), stream=_each(_completion_chunk)),
    _at(r"/v1/(engines/[^/]+/)?embeddings", json=_embeddings),
    _at(r"/v1/moderations", json=_spec("CreateModerationResponse")),
    _at(r"/v1/models", json=_spec("ListModelsResponse")),
    _at(r"/v1/models/[^/]+", json=_spec("Model")),
    _at(r"/v1/responses", json=_spec("Response"), stream=_numbered("ResponseStreamEvent")),
    _at(r"/v1/responses/compact", json=_spec("CompactResource")),
    _at(r"/v1/images/generations", json=_spec("ImagesResponse"), stream=_each(_spec("ImageGenStreamEvent"))),
    _at(r"/v1/(images/)?edits", json=_spec("ImagesResponse"), stream=_each(_spec("ImageEditStreamEvent"))),
    _at(r"/v1/audio/transcriptions", json=_one_of("CreateTranscriptionResponseJson",
                                                  "CreateTranscriptionResponseVerboseJson",
                                                  "CreateTranscriptionResponseDiarizedJson"),
        stream=_each(_spec("CreateTranscriptionResponseStreamEvent")), media=("text/plain",)),
    _at(r"/v1/audio/translations", json=_one_of("CreateTranslationResponseJson",
                                                "CreateTranslationResponseVerboseJson"), media=("text/plain",)),
    _at(r"/v1/audio/speech", stream=_each(_spec("CreateSpeechResponseStreamEvent")), media=("audio/",)),
    _at(r"/v1/rerank", json=_validator(RERANK_ANSWER)),
    _at(r"/v1/alpha/search", json=_validator(alpha_search.ANSWER_SCHEMA)),
    _at(r"(/v1)?/dashboard/billing/subscription", json=_validator(BILLING_SUBSCRIPTION)),
    _at(r"(/v1)?/dashboard/billing/usage", json=_validator(BILLING_USAGE)),
)


def events_of(data: bytes) -> list[Any]:
    """The JSON of each server-sent event's ``data`` (``[DONE]`` left out), in order."""
    events = []
    for block in re.split(rb"\r?\n\r?\n", data):
        lines = [line[5:].removeprefix(b" ") for line in re.split(rb"\r?\n", block) if line.startswith(b"data:")]
        if lines and lines != [b"[DONE]"]:
            events.append(orjson.loads(b"\n".join(lines)))
    return events


def _json(answer: Answer, data: bytes) -> Any:
    assert answer.content_type.startswith("application/json"), \
        f"{answer.method} {answer.path}: JSON answered as {answer.content_type!r}"
    return orjson.loads(data)


def check_answer(answer: Answer) -> Any:
    """Validate ``answer`` by its path (an unknown path fails: every endpoint is covered) and
    return what it carries: the JSON object, the list of stream events, the text or bytes."""
    data = answer.data()
    where = f"{answer.method} {answer.path} ({answer.status})"
    if answer.status >= 400:
        return validate("ErrorResponse", _json(answer, data))
    endpoint = next((e for e in _ENDPOINTS if e.pattern.fullmatch(answer.path)), None)
    if endpoint is None:
        raise AssertionError(f"{where}: no schema known for this path")
    if answer.status != 200:
        raise AssertionError(f"{where}: not a success")
    if answer.content_type.startswith("text/event-stream"):
        assert endpoint.stream is not None, f"{where}: streamed, but the endpoint does not stream"
        return endpoint.stream(events_of(data))
    if endpoint.json is not None and answer.content_type.startswith("application/json"):
        return endpoint.json(_json(answer, data))
    if not any(answer.content_type.startswith(media) for media in endpoint.media):
        raise AssertionError(f"{where}: unexpected content type {answer.content_type!r}")
    assert data, f"{where}: an empty body"
    return data.decode() if answer.content_type.startswith("text/") else data


# ---- recording what a client receives ----------------------------------------------------------

class Recorder:
    """Keeps every answer an ``httpx`` client receives through :meth:`transport` /
    :meth:`async_transport`, its body recorded as the client reads it (streams included)."""

    def __init__(self) -> None:
        self.answers: list[Answer] = []

    def _start(self, request: httpx.Request, response: httpx.Response) -> Answer:
        answer = Answer(request.method, request.url.path, response.status_code,
                        response.headers.get("content-type", ""),
                        encoding=response.headers.get("content-encoding", "").strip().lower())
        self.answers.append(answer)
        return answer

    def transport(self, inner: httpx.BaseTransport | None = None) -> httpx.BaseTransport:
        return _Recording(inner or httpx.HTTPTransport(), self)

    def async_transport(self, inner: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncBaseTransport:
        return _AsyncRecording(inner or httpx.AsyncHTTPTransport(), self)

    def check(self) -> list[Any]:
        """Each answer received since the last check, validated (:func:`check_answer`)."""
        answers, self.answers = self.answers, []
        assert answers, "no answer was received"
        return [check_answer(answer) for answer in answers]


class _Recording(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport, recorder: Recorder) -> None:
        self.inner, self.recorder = inner, recorder

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        answer = self.recorder._start(request, response)
        assert isinstance(response.stream, httpx.SyncByteStream)
        inner_stream: httpx.SyncByteStream = response.stream  # typed: the closures below keep it

        class Copying(httpx.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                for chunk in inner_stream:
                    answer.body.extend(chunk)
                    yield chunk

            def close(self) -> None:
                inner_stream.close()

        return httpx.Response(response.status_code, headers=response.headers, stream=Copying(),
                              extensions=response.extensions)

    def close(self) -> None:
        self.inner.close()


class _AsyncRecording(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport, recorder: Recorder) -> None:
        self.inner, self.recorder = inner, recorder

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        answer = self.recorder._start(request, response)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        inner_stream: httpx.AsyncByteStream = response.stream  # typed: the closures below keep it

        class Copying(httpx.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in inner_stream:
                    answer.body.extend(chunk)
                    yield chunk

            async def aclose(self) -> None:
                await inner_stream.aclose()

        return httpx.Response(response.status_code, headers=response.headers, stream=Copying(),
                              extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()
