"""A fake Gemini API (Google AI Studio) on a real loopback TCP port.

Speaks Gemini's documented wire format under ``/v1beta`` and ``/v1``:
``POST models/{model}:generateContent``, ``:streamGenerateContent`` (``?alt=sse``, or one
JSON array), ``:embedContent``, ``:batchEmbedContents``, ``:countTokens``, and
``GET models`` (``pageSize`` / ``pageToken``) and ``GET models/{model}``; answers come
from :mod:`.answers`. It is a :class:`~faregate.testing.fake_server.FakeServer`, so
faults can be injected and streams cut.

Behaviour:

* The key goes in ``x-goog-api-key`` or ``?key=``; it must be ``key`` or one of
  ``extra_keys`` when a key is set. None: 403 PERMISSION_DENIED; a wrong one: 400
  INVALID_ARGUMENT with the ``API_KEY_INVALID`` reason, as Google answers. ``keys_seen``
  counts the calls per key.
* Every ``POST`` body is validated against Gemini's Discovery document (:mod:`.schema`):
  a violation is answered 400 INVALID_ARGUMENT and recorded in ``fake.violations`` (the
  ``fake_gemini`` fixture fails the test). Its own answers are checked the same way
  against the response schemas. ``validate_requests=False`` turns both off.
* The real API's rules beyond the schema (:func:`.answers.check_turns` …) are 400s too.
* A model not in ``models`` is 404 NOT_FOUND. ``cached_tokens`` is reported as
  ``cachedContentTokenCount`` (inside ``promptTokenCount``); ``embedding_usage`` adds
  ``usageMetadata`` to embedding answers.

Faults (``fake.push_fault(Fault(kind, ...))`` or ``fake.fail_next(status, message)``): the
shared kinds, plus ``overloaded`` (503 UNAVAILABLE) and ``stream_error`` (a stream's first
``after_chunks`` chunks, then an error object in place of the next, after ``delay`` seconds
when given; a whole answer: 500).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from faregate.testing import fake_server
from faregate.testing.fake_server import FakeServer, Request, Response
from faregate_adapter_gemini.errors import GOOGLE_STATUSES
from faregate_adapter_gemini.fields import get
from faregate_adapter_gemini.testing import answers
from faregate_adapter_gemini.testing.answers import BadInput

__all__ = ["DEFAULT_MODELS", "EMBEDDING", "FAULT_KINDS", "FLASH", "GEMINI_3", "PRO", "FakeGemini", "Fault",
           "error_body"]

FAULT_KINDS = fake_server.FAULT_KINDS | {"overloaded", "stream_error"}
#: the models the fake serves unless told more: a Gemini 2.5 Flash and Pro, a Gemini 3, an embedding model
FLASH, PRO, GEMINI_3, EMBEDDING = "gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-pro-preview", "gemini-embedding-001"
DEFAULT_MODELS = (FLASH, PRO, GEMINI_3, EMBEDDING)
ACTIONS = ("generateContent", "streamGenerateContent", "embedContent", "batchEmbedContents", "countTokens")
VERSIONS = ("v1beta", "v1", "v1alpha")
_STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
                 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_INVALID_KEY = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                 "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}}]


@dataclass
class Fault(fake_server.Fault):
    """A fault of the fake Gemini server: the shared kinds plus ``overloaded`` and ``stream_error``."""

    kinds: ClassVar[frozenset[str]] = FAULT_KINDS


def error_body(status: int, message: str | None = None, details: list[dict[str, Any]] | None = None) -> bytes:
    """Google's error body: ``{"error": {"code", "message", "status"[, "details"]}}``."""
    name = _STATUS_NAMES.get(status) or ("INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    assert name in GOOGLE_STATUSES
    error: dict[str, Any] = {"code": status, "message": message or name.replace("_", " ").capitalize(),
                             "status": name}
    if details:
        error["details"] = details
    body: bytes = orjson.dumps({"error": error})
    return body


def _route(path: str) -> tuple[str, str, str] | None:
    """``(version, model, action)`` of ``/{version}/models/{model}[:{action}]``."""
    version, _, rest = path.lstrip("/").partition("/")
    if version not in VERSIONS or not rest.startswith("models/"):
        return None
    model, _, action = rest[len("models/"):].partition(":")
    return (version, model, action) if model and "/" not in model else None


class FakeGemini(FakeServer):
    """Fake Gemini API. See the module docstring."""

    fault_type = Fault
    malformed_json = b'{"candidates": [{"content": {"parts": [{"text": "'

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, key: str | None = None,
                 extra_keys: Iterable[str] = (), models: Iterable[str] = (), validate_requests: bool = True) -> None:
        super().__init__(host, port, key=key, validate_requests=validate_requests)
        self.extra_keys = set(extra_keys)
        self.models = list(dict.fromkeys([*DEFAULT_MODELS, *models]))
        self.cached_tokens = 0
        self.embedding_usage = False
        self.keys_seen: Counter[str] = Counter()
        self._ids = itertools.count(1)

    # ---- errors, faults, schema -----------------------------------------------------------
    def error_body(self, status: int, message: str | None = None) -> bytes:
        return error_body(status, message)

    def schema_problem(self, request: Request) -> str | None:
        route = _route(request.path)
        if request.method != "POST" or route is None or route[2] not in ACTIONS:
            return None
        if request.json is None:
            return "the body is not JSON"
        from faregate_adapter_gemini.testing.schema import request_problem  # needs faregate[testing]

        return request_problem(route[2], request.json)

    def check_answer(self, component: str, obj: Any) -> None:
        """Record an answer of the fake's own that the response schema refuses."""
        if not self.validate_requests:
            return
        from faregate_adapter_gemini.testing.schema import RESPONSES

        problem = RESPONSES.problem(component, obj)
        if problem is not None:
            self.violations.append({"path": "(answer)", "error": problem, "json": obj})

    async def answer_fault(self, request: Request, response: Response) -> bool:
        fault = response.fault
        assert fault is not None
        self.check_request(request)
        streaming = ":streamGenerateContent" in request.path
        if fault.kind == "overloaded":
            response.send(503, error_body(503, "The model is overloaded. Please try again later."))
            return True
        if fault.kind == "stream_error" and not streaming:
            response.send(500, error_body(500, "An internal error has occurred."))
            return True
        return await super().answer_fault(request, response)

    # ---- routes ---------------------------------------------------------------------------
    def _key_problem(self, request: Request) -> tuple[int, bytes] | None:
        given = request.headers.get("x-goog-api-key") or request.query.get("key")
        if not given:
            return 403, error_body(403, "Method doesn't allow unregistered callers (callers without established "
                                        "identity). Please use API Key or other form of API consumer identity to "
                                        "call this API.")
        if self.key is not None and given != self.key and given not in self.extra_keys:
            return 400, error_body(400, "API key not valid. Please pass a valid API key.", _INVALID_KEY)
        self.keys_seen[given] += 1
        return None

    async def answer(self, request: Request, response: Response) -> None:
        refused = self._key_problem(request)
        if refused is not None:
            return response.send(*refused)
        version = request.path.lstrip("/").partition("/")[0]
        if request.method == "GET" and request.path.rstrip("/") == f"/{version}/models" and version in VERSIONS:
            return response.send(200, self._model_page(request.query))
        route = _route(request.path)
        if route is None or (request.method == "GET") != (route[2] == ""):
            return response.send(404, error_body(404, f"Not found: {request.method} {request.path}"))
        _, model, action = route
        if model not in self.models:
            return response.send(404, error_body(404, f"models/{model} is not found for API version {version}, or "
                                                      f"is not supported for {action or 'get'}."))
        if request.method == "GET":
            return response.send(200, orjson.dumps(answers.model_entry(model)))
        if action not in ACTIONS:
            return response.send(404, error_body(404, f"Not found: {action}"))
        violation = self.check_request(request)
        if violation is not None:
            return response.send(400, error_body(400, f"Invalid JSON payload received. {violation}"))
        try:
            await self._act(request, response, model, action)
        except BadInput as exc:
            response.send(400, error_body(400, str(exc)))

    async def _act(self, request: Request, response: Response, model: str, action: str) -> None:
        body: dict[str, Any] = request.json
        if action == "countTokens":
            total = answers.count(body)
            answer: dict[str, Any] = {"totalTokens": total,
                                      "promptTokensDetails": [{"modality": "TEXT", "tokenCount": total}]}
            self.check_answer("CountTokensResponse", answer)
            return response.send(200, orjson.dumps(answer))
        if action in ("embedContent", "batchEmbedContents"):
            return response.send(200, self._embed(body, model, action))
        answer = answers.generate(body, model, f"fake{self.id_prefix}{next(self._ids):06d}", self.cached_tokens)
        self.check_answer("GenerateContentResponse", answer)
        if action == "generateContent":
            return await response.reply(200, orjson.dumps(answer))
        chunks = answers.chunks(answer)
        fault = response.fault
        pause: tuple[int, float] | None = None
        if fault is not None and fault.kind == "stream_error":
            k = max(0, min(fault.after_chunks, len(chunks) - 1))
            err = orjson.loads(error_body(500, fault.message or "An internal error has occurred."))
            chunks = [*chunks[:k], err]
            if fault.delay:  # the chunks first, the error later: the client has seen content by then
                pause = (k, fault.delay)
        if request.query.get("alt") == "sse":
            frames = [b"data: " + orjson.dumps(c) + b"\r\n\r\n" for c in chunks]
            return await response.stream(frames, pause=pause)
        frames = [(b"[" if i == 0 else b"\n,\r\n") + orjson.dumps(c) for i, c in enumerate(chunks)] + [b"\n]"]
        await response.stream(frames, content_type=b"application/json; charset=UTF-8", pause=pause)

    def _embed(self, body: dict[str, Any], model: str, action: str) -> bytes:
        batch = action == "batchEmbedContents"
        requests = get(body, "requests") if batch else [body]
        for i, request in enumerate(requests):
            named = get(request, "model")
            if named is not None and named != f"models/{model}":
                raise BadInput(f"Model {named} in requests[{i}] does not match the model of the batch, "
                               f"models/{model}.")
        found = [answers.embedding(get(r, "content"), answers.dimensions(r)) for r in requests]
        answer: dict[str, Any] = {"embeddings": found} if batch else {"embedding": found[0]}
        if self.embedding_usage:
            answer["usageMetadata"] = {"promptTokenCount": sum(answers.tokens(answers.text_of(get(r, "content")))
                                                               for r in requests)}
        self.check_answer("BatchEmbedContentsResponse" if batch else "EmbedContentResponse", answer)
        return orjson.dumps(answer)

    def _model_page(self, query: dict[str, str]) -> bytes:
        size = min(int(query.get("pageSize") or 50) or 50, 1000)
        start = int(query.get("pageToken") or 0)
        page = [answers.model_entry(m) for m in self.models[start:start + size]]
        answer: dict[str, Any] = {"models": page}
        if start + size < len(self.models):
            answer["nextPageToken"] = str(start + size)
        self.check_answer("ListModelsResponse", answer)
        return orjson.dumps(answer)
