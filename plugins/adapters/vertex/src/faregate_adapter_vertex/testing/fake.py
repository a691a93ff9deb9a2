"""A fake Google Vertex AI on a real loopback TCP port, both publishers, for tests and
``faregate dev fake-provider vertex``.

Routes, as Vertex's: ``POST /v1/projects/{project}/locations/{location}/publishers/google/
models/{model}:generateContent`` and ``:streamGenerateContent`` (``?alt=sse``, or one JSON
array), the same under ``/v1/publishers/google/models/…`` (express mode, API keys only),
``POST …/publishers/anthropic/models/{model}:rawPredict`` and ``:streamRawPredict``, and
``GET /v1beta1/publishers/google/models``.

Behaviour:

* Credentials as Google checks them: ``Authorization: Bearer`` with an access token the
  fake token endpoint (:class:`~.oauth.FakeGoogleOAuth`) issued and that has not expired,
  for the project in the path (``x-goog-user-project`` too, when sent); or an API key in
  ``x-goog-api-key`` (or ``?key=``) equal to ``api_key``. Otherwise 401 UNAUTHENTICATED, or
  400 ``API_KEY_INVALID`` for a wrong API key, 403 PERMISSION_DENIED for another project.
  ``tokens_seen`` / ``api_keys_seen`` count the calls per credential.
* Gemini bodies are checked against Vertex's own Discovery document (:mod:`.schema`), which
  refuses what Gemini's API takes and Vertex does not (function-call ids); the answers are
  the fake Gemini's (:mod:`faregate_adapter_gemini.testing.answers`) with Vertex's extra
  fields (``createTime``, ``usageMetadata.trafficType``), checked against Vertex's response
  schema.
* Claude bodies are checked as Vertex takes them: ``anthropic_version: vertex-2023-10-16``,
  no ``model``, ``stream: true`` exactly on ``streamRawPredict``, the rest against
  Anthropic's published request schema; the answers are the fake Anthropic's. Models go by
  Vertex's names (``claude-sonnet-4-5@20250929``).
* A schema violation is answered 400 INVALID_ARGUMENT and recorded in ``fake.violations``.

Faults: those of :class:`~faregate_adapter_gemini.testing.FakeGemini` (``overloaded``,
``stream_error`` …), on both publishers' routes.
"""

from __future__ import annotations

import datetime
import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson

from faregate.testing import fake_server
from faregate.testing.fake_server import Request, Response
from faregate_adapter_anthropic.testing.fake import FakeAnthropic, _BadInput
from faregate_adapter_gemini.testing import answers
from faregate_adapter_gemini.testing.fake import FakeGemini, error_body
from faregate_adapter_vertex.names import ANTHROPIC_VERSION
from faregate_adapter_vertex.testing.accounts import PROJECT
from faregate_adapter_vertex.testing.oauth import FakeGoogleOAuth

__all__ = ["API_KEY", "CLAUDE_MODELS", "FakeVertex"]

#: the API key (express mode) the fake takes unless told another
API_KEY = "AQ.Ab8RN6fakeVertexExpressKey0123456789"
CLAUDE_MODELS = ("claude-sonnet-4-5@20250929", "claude-haiku-4-5@20251001", "claude-3-5-haiku@20241022")
_ROUTE = re.compile(r"/v1/(?:projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/)?publishers/"
                    r"(?P<publisher>google|anthropic)/models/(?P<model>[^/:]+):(?P<action>[A-Za-z]+)")
_GOOGLE_ACTIONS = ("generateContent", "streamGenerateContent")
_ANTHROPIC_ACTIONS = ("rawPredict", "streamRawPredict")
_NO_CREDENTIALS = ("Request is missing required authentication credential. Expected OAuth 2 access token, login "
                   "cookie or other valid authentication credential.")
_BAD_TOKEN = ("Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
              "valid authentication credential.")
_INVALID_KEY = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                 "domain": "googleapis.com", "metadata": {"service": "aiplatform.googleapis.com"}}]


class _Claude(FakeAnthropic):
    """The fake Anthropic's answers, for Vertex's Claude models."""

    def message(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._answer(body)

    def events(self, message: dict[str, Any], fault: fake_server.Fault | None) -> list[bytes]:
        return self._events(message, fault)


class FakeVertex(FakeGemini):
    """Fake Vertex AI. See the module docstring. ``key`` is the API key it takes."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, oauth: FakeGoogleOAuth | None = None,
                 project: str = PROJECT, api_key: str | None = API_KEY, models: Iterable[str] = (),
                 validate_requests: bool = True) -> None:
        super().__init__(host, port, key=api_key, models=models, validate_requests=validate_requests)
        self.oauth = oauth
        self.project = project
        self.claude = _Claude(validate_requests=False)
        self.claude_models = list(CLAUDE_MODELS)
        self.tokens_seen: Counter[str] = Counter()
        self.api_keys_seen: Counter[str] = Counter()

    @property
    def channel_fields(self) -> dict[str, Any]:
        """What a channel with the API key (``key``) needs besides, to reach both publishers:
        a region, and the project (``vertex_project``)."""
        return {"other": "us-central1", "setting": json.dumps({"vertex_project": self.project})}

    # ---- the schemas ----------------------------------------------------------------------
    def schema_problem(self, request: Request) -> str | None:
        route = _ROUTE.fullmatch(request.path)
        if request.method != "POST" or route is None:
            return None
        body = request.json
        if not isinstance(body, dict):
            return "the body is not a JSON object"
        if route["publisher"] == "google":
            from faregate_adapter_vertex.testing.schema import request_problem

            return request_problem(body)
        if body.get("anthropic_version") != ANTHROPIC_VERSION:
            return f"anthropic_version: must be {ANTHROPIC_VERSION!r}"
        if "model" in body:
            return "model: the model is in the URL; the body must not name one"
        if (body.get("stream") is True) != (route["action"] == "streamRawPredict"):
            return "stream: true exactly when calling streamRawPredict"
        from faregate_adapter_anthropic.testing.schema import request_errors  # needs faregate[testing]

        return request_errors({**{k: v for k, v in body.items() if k != "anthropic_version"},
                               "model": route["model"].split("@", 1)[0]})

    def check_answer(self, component: str, obj: Any) -> None:
        if not self.validate_requests:
            return
        from faregate_adapter_vertex.testing.schema import RESPONSES

        problem = RESPONSES.problem(component, obj)
        if problem is not None:
            self.violations.append({"path": "(answer)", "error": problem, "json": obj})

    async def answer_fault(self, request: Request, response: Response) -> bool:
        fault = response.fault
        assert fault is not None
        if fault.kind == "stream_error" and request.path.endswith(":streamRawPredict"):
            self.check_request(request)
            return False  # the Claude stream carries the error event itself
        return await super().answer_fault(request, response)

    # ---- credentials ----------------------------------------------------------------------
    def credential_problem(self, request: Request, project: str | None, publisher: str) -> tuple[int, bytes] | None:
        authorization = request.headers.get("authorization", "")
        api_key = request.headers.get("x-goog-api-key") or request.query.get("key")
        if authorization.startswith("Bearer "):
            token = authorization[len("Bearer "):]
            email = self.oauth.valid(token) if self.oauth is not None else None
            if email is None:
                return 401, error_body(401, _BAD_TOKEN)
            self.tokens_seen[token] += 1
            if project is None:
                return 404, error_body(404, "Publisher models need a project and location with OAuth credentials.")
            quota_project = request.headers.get("x-goog-user-project", project)
            if project != self.project or quota_project != self.project or not email.endswith(
                    f"@{self.project}.iam.gserviceaccount.com"):
                return 403, error_body(403, f"Permission denied on resource project {project}.")
            return None
        if api_key:
            if self.key is not None and api_key != self.key:
                return 400, error_body(400, "API key not valid. Please pass a valid API key.", _INVALID_KEY)
            self.api_keys_seen[api_key] += 1
            if project is None and publisher != "google":
                return 404, error_body(404, "Express mode serves Google's models only.")
            return None
        return 401, error_body(401, _NO_CREDENTIALS)

    # ---- routes ---------------------------------------------------------------------------
    async def answer(self, request: Request, response: Response) -> None:
        if request.method == "GET" and request.path.rstrip("/") == "/v1beta1/publishers/google/models":
            refused = self.credential_problem(request, self.project, "google")
            if refused is not None:
                return response.send(*refused)
            names = [{"name": f"publishers/google/models/{m}", "versionId": "001", "launchStage": "GA"}
                     for m in self.models]
            return response.send(200, orjson.dumps({"publisherModels": names}))
        route = _ROUTE.fullmatch(request.path)
        if route is None or request.method != "POST":
            return response.send(404, error_body(404, f"Not found: {request.method} {request.path}"))
        refused = self.credential_problem(request, route["project"], route["publisher"])
        if refused is not None:
            return response.send(*refused)
        violation = self.check_request(request)
        if violation is not None:
            return response.send(400, error_body(400, f"Invalid JSON payload received. {violation}"))
        model, action = route["model"], route["action"]
        try:
            if route["publisher"] == "anthropic":
                return await self._claude(request, response, model, action)
            await self._gemini(request, response, model, action)
        except (answers.BadInput, _BadInput) as exc:
            response.send(400, error_body(400, str(exc)))

    async def _gemini(self, request: Request, response: Response, model: str, action: str) -> None:
        if action not in _GOOGLE_ACTIONS or model not in self.models:
            return response.send(404, error_body(404, f"Publisher Model `publishers/google/models/{model}` was not "
                                                      f"found or your project does not have access to it."))
        answer = answers.generate(request.json, model, f"vtx{self.id_prefix}{next(self._ids):06d}", self.cached_tokens)
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        answer = {**answer, "createTime": stamp, "usageMetadata": {**answer["usageMetadata"],
                                                                   "trafficType": "ON_DEMAND"}}
        self.check_answer("GenerateContentResponse", answer)
        if action == "generateContent":
            return await response.reply(200, orjson.dumps(answer))
        chunks = answers.chunks(answer)
        fault = response.fault
        if fault is not None and fault.kind == "stream_error":
            k = max(0, min(fault.after_chunks, len(chunks) - 1))
            chunks = [*chunks[:k], orjson.loads(error_body(500, fault.message or "Internal error encountered."))]
        if request.query.get("alt") == "sse":
            return await response.stream([b"data: " + orjson.dumps(c) + b"\r\n\r\n" for c in chunks])
        frames = [(b"[" if i == 0 else b",\r\n") + orjson.dumps(c) for i, c in enumerate(chunks)] + [b"]"]
        await response.stream(frames, content_type=b"application/json; charset=UTF-8")

    async def _claude(self, request: Request, response: Response, model: str, action: str) -> None:
        if action not in _ANTHROPIC_ACTIONS or model not in self.claude_models:
            return response.send(404, error_body(404, f"Publisher Model `publishers/anthropic/models/{model}` was "
                                                      f"not found or your project does not have access to it."))
        message = self.claude.message({**request.json, "model": model})
        if action == "rawPredict":
            return await response.reply(200, orjson.dumps(message))
        await response.stream(self.claude.events(message, response.fault))
