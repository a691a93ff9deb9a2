"""A fake Amazon Bedrock runtime (and the control plane's model list) on a real loopback TCP
port, for tests and ``faregate dev fake-provider bedrock``.

Routes, as Bedrock's: ``POST /model/{modelId}/invoke`` and ``/invoke-with-response-stream``
(Claude, Anthropic's Messages body), ``POST /model/{modelId}/converse`` and
``/converse-stream`` (any model it serves), ``GET /foundation-models``. Streams are real
AWS event-stream messages (:mod:`.eventstream`): Claude's events base64 in ``chunk``
events (the last one's ``message_stop`` with Bedrock's ``amazon-bedrock-invocationMetrics``),
Converse's typed events, payloads padded with ``p`` as Bedrock pads them.

Behaviour:

* Authentication as AWS checks it: a SigV4 signature (``Authorization: AWS4-HMAC-SHA256
  …``) is recomputed with botocore from the request as it arrived and the fake's
  ``secret_key`` (:mod:`.sigv4`: access key, region, service, date and signature all
  checked), or a Bedrock API key (``Authorization: Bearer``) compared with ``api_key``;
  anything else is a 403 with AWS's words. ``auth_seen`` counts the calls per kind.
* Claude bodies are checked as Bedrock takes them: ``anthropic_version:
  bedrock-2023-05-31``, no ``model`` or ``stream``, ``anthropic_beta`` a list, and the rest
  against Anthropic's published request schema (the Anthropic plugin's validator, with the
  model put back); answers come from the fake Anthropic's logic (:class:`FakeAnthropic`).
  Newer Claude models are refused by their bare id, as on Bedrock: they are served through
  cross-region inference profiles (``us.anthropic…``) only.
* Converse bodies are checked against :mod:`.converse_schema` (written from AWS's API
  reference) and the rules it states in prose (:mod:`.converse_answers`).
* A schema violation is answered 400 ``ValidationException`` and recorded in
  ``fake.violations`` (the ``fake_bedrock`` fixture fails the test).

Faults: the shared kinds of :mod:`faregate.testing.fake_server`, plus ``throttled`` (429
ThrottlingException) and ``stream_error`` (a stream's first ``after_chunks`` events, then a
``modelStreamErrorException`` event; a whole answer: 500).
"""

from __future__ import annotations

import base64
import itertools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import unquote

import orjson

from faregate.testing import fake_server
from faregate.testing.fake_server import Request, Response
from faregate_adapter_anthropic.testing import fake as anthropic_fake
from faregate_adapter_anthropic.testing.fake import FakeAnthropic, _BadInput
from faregate_adapter_bedrock.names import ANTHROPIC_VERSION
from faregate_adapter_bedrock.testing import converse_answers, eventstream, sigv4

__all__ = ["ACCESS_KEY", "API_KEY", "CONVERSE_MODELS", "EVENT_STREAM", "FAULT_KINDS", "REGION", "SECRET_KEY",
           "FakeBedrock", "Fault", "error_body"]

FAULT_KINDS = fake_server.FAULT_KINDS | {"throttled", "stream_error"}
EVENT_STREAM = b"application/vnd.amazon.eventstream"
#: the fake's default credentials (AWS's documented example access key)
ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
API_KEY = "ABSKQmVkcm9ja0FQSUtleS1mYWtlLWJlZHJvY2s="
REGION = "us-east-1"
#: models served through Converse (besides every Claude id)
CONVERSE_MODELS = ("amazon.nova-pro-v1:0", "us.amazon.nova-pro-v1:0", "meta.llama3-1-70b-instruct-v1:0",
                   "mistral.mistral-large-2407-v1:0")
#: Claude models Bedrock serves through inference profiles only (their bare id is refused)
PROFILE_ONLY = ("anthropic.claude-3-7", "anthropic.claude-sonnet-4", "anthropic.claude-opus-4",
                "anthropic.claude-haiku-4")
_ROUTE = re.compile(r"/model/(?P<model>[^/]+)/(?P<action>invoke|invoke-with-response-stream|converse|converse-stream)")
_EXCEPTIONS = {400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
               424: "ModelErrorException", 429: "ThrottlingException", 500: "InternalServerException",
               503: "ServiceUnavailableException"}
_INVALID_MODEL = "The provided model identifier is invalid."


@dataclass
class Fault(anthropic_fake.Fault):
    """A fault of the fake Bedrock: the shared kinds plus ``throttled`` and ``stream_error``."""

    kinds: ClassVar[frozenset[str]] = FAULT_KINDS


def error_body(status: int, message: str | None = None) -> bytes:
    """Bedrock's error body: ``{"message": …}`` (the exception's name is in a header)."""
    body: bytes = orjson.dumps({"message": message or _EXCEPTIONS.get(status, "InternalServerException")})
    return body


def _error_headers(status: int, name: str | None = None) -> tuple[tuple[bytes, bytes], ...]:
    name = name or _EXCEPTIONS.get(status, "InternalServerException" if status >= 500 else "ValidationException")
    return ((b"x-amzn-errortype", f"{name}:http://internal.amazon.com/coral/com.amazon.bedrock/".encode()),)


def is_claude(model_id: str) -> bool:
    return "anthropic.claude" in model_id


class FakeBedrock(FakeAnthropic):
    """Fake Bedrock runtime. See the module docstring. ``key`` (the conformance suites'
    channel key) is the Bedrock API key; :attr:`sigv4_key` is the channel key of the
    access key the fake knows."""

    fault_type = Fault
    malformed_json = b'{"output": {"message": {"role": "assistant", "content": ['
    request_id_header = b"x-amzn-requestid"

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = API_KEY,
                 access_key: str | None = ACCESS_KEY, secret_key: str = SECRET_KEY, region: str = REGION,
                 models: Iterable[str] = (), validate_requests: bool = True) -> None:
        super().__init__(host, port, key=api_key, validate_requests=validate_requests)
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = region
        self.converse_models = list(dict.fromkeys([*CONVERSE_MODELS, *models]))
        self.auth_seen: Counter[str] = Counter()
        self._converse_ids = itertools.count(1)

    @property
    def sigv4_key(self) -> str:
        """The channel key (new-api's ``AK|SK|region``) of the access key the fake knows."""
        return f"{self.access_key}|{self.secret_key}|{self.region}"

    @property
    def channel_fields(self) -> dict[str, str]:
        """What a channel with the bare API key (``key``) needs besides: the region."""
        return {"other": self.region}

    @property
    def api_key_channel_key(self) -> str:
        """The channel key (``APIKEY|region``) of the API key the fake knows."""
        return f"{self.key}|{self.region}"

    # ---- errors and faults ----------------------------------------------------------------
    def error_body(self, status: int, message: str | None = None) -> bytes:
        return error_body(status, message)

    def fault_body(self, fault: fake_server.Fault) -> bytes:
        return fault.body if fault.body is not None else error_body(fault.status, fault.message)

    async def answer_fault(self, request: Request, response: Response) -> bool:
        fault = response.fault
        assert fault is not None
        self.check_request(request)
        if fault.kind == "throttled":
            response.send(429, error_body(429, "Too many requests, please wait before trying again."),
                          extra=_error_headers(429))
            return True
        if fault.kind == "stream_error" and not request.path.endswith("stream"):
            response.send(500, error_body(500, "The system encountered an unexpected error during processing."),
                          extra=_error_headers(500))
            return True
        return await fake_server.FakeServer.answer_fault(self, request, response)

    def _refuse(self, response: Response, status: int, message: str, exception: str | None = None) -> None:
        response.send(status, error_body(status, message), extra=_error_headers(status, exception))

    # ---- authentication -------------------------------------------------------------------
    def auth_problem(self, request: Request) -> str | None:
        authorization = request.headers.get("authorization", "")
        if authorization.startswith("Bearer "):
            self.auth_seen["bearer"] += 1
            if self.key is not None and authorization[len("Bearer "):] != self.key:
                return "Authentication failed: the Bedrock API key is invalid."
            return None
        self.auth_seen["sigv4"] += 1
        if self.access_key is None:
            return sigv4.UNKNOWN_KEY if authorization else sigv4.MISSING
        url = "http://" + request.headers.get("host", f"{self.host}:{self.port}") + request.target
        return sigv4.problem(request.method, url, request.headers, request.body, access_key=self.access_key,
                             secret_key=self.secret_key, region=self.region)

    # ---- the schema ---------------------------------------------------------------------
    def schema_problem(self, request: Request) -> str | None:
        route = _ROUTE.fullmatch(request.path)
        if request.method != "POST" or route is None:
            return None
        body = request.json
        if not isinstance(body, dict):
            return "the body is not a JSON object"
        if route["action"].startswith("converse"):
            from faregate_adapter_bedrock.testing.converse_schema import request_problem

            return request_problem(body)
        if body.get("anthropic_version") != ANTHROPIC_VERSION:
            return f"anthropic_version: must be {ANTHROPIC_VERSION!r}"
        for name in ("model", "stream"):
            if name in body:
                return f"extraneous key [{name}] is not permitted"
        beta = body.get("anthropic_beta")
        if beta is not None and not (isinstance(beta, list) and all(isinstance(b, str) for b in beta)):
            return "anthropic_beta: expected a list of strings"
        from faregate_adapter_anthropic.testing.schema import request_errors  # needs faregate[testing]

        rest = {k: v for k, v in body.items() if k not in ("anthropic_version", "anthropic_beta")}
        return request_errors({**rest, "model": unquote(route["model"])})

    # ---- routes ---------------------------------------------------------------------------
    async def answer(self, request: Request, response: Response) -> None:
        refused = self.auth_problem(request)
        if refused is not None:
            return self._refuse(response, 403, refused, sigv4.exception_for(refused))
        if request.method == "GET" and request.path.rstrip("/") == "/foundation-models":
            return response.send(200, self._model_list())
        route = _ROUTE.fullmatch(request.path)
        if request.method != "POST" or route is None:
            return response.send(404, error_body(404, f"Unknown operation: {request.method} {request.path}"))
        model_id, action = unquote(route["model"]), route["action"]
        violation = self.check_request(request)
        if violation is not None:
            return self._refuse(response, 400, f"Malformed input request: {violation}, please reformat your input "
                                               "and try again.")
        if action.startswith("invoke"):
            return await self._invoke(request, response, model_id, action.endswith("stream"))
        await self._converse(request, response, model_id, action.endswith("stream"))

    async def _invoke(self, request: Request, response: Response, model_id: str, stream: bool) -> None:
        if not is_claude(model_id):
            return self._refuse(response, 400, _INVALID_MODEL)
        if model_id.startswith(PROFILE_ONLY):
            return self._refuse(response, 400, f"Invocation of model ID {model_id} with on-demand throughput isn't "
                                               "supported. Retry your request with the ID or ARN of an inference "
                                               "profile that contains this model.")
        try:
            message = self._answer({**request.json, "model": model_id})
        except _BadInput as exc:  # the fake Anthropic's own 400s
            return self._refuse(response, 400, str(exc))
        if not stream:
            return await response.reply(200, orjson.dumps(message))
        frames = []
        for sse in self._events(message, response.fault):
            name, _, data = sse.partition(b"\ndata: ")
            payload = orjson.loads(data)
            kind = name.removeprefix(b"event: ").decode()
            if kind == "ping":
                continue  # Bedrock sends none
            if kind == "error":
                frames.append(eventstream.exception("modelStreamErrorException", payload["error"]["message"]))
                continue
            if kind == "message_stop":
                usage = message["usage"]
                payload["amazon-bedrock-invocationMetrics"] = {
                    "inputTokenCount": usage["input_tokens"], "outputTokenCount": usage["output_tokens"],
                    "invocationLatency": 420, "firstByteLatency": 120}
            frames.append(eventstream.event("chunk", {"bytes": base64.b64encode(orjson.dumps(payload)).decode()}))
        await response.stream(frames, content_type=EVENT_STREAM,
                              extra=((b"x-amzn-bedrock-content-type", b"application/json"),))

    async def _converse(self, request: Request, response: Response, model_id: str, stream: bool) -> None:
        if not is_claude(model_id) and model_id not in self.converse_models:
            return self._refuse(response, 400, _INVALID_MODEL)
        try:
            converse_answers.check_rules(request.json)
        except converse_answers.BadInput as exc:
            return self._refuse(response, 400, str(exc))
        answer = converse_answers.answer(request.json, self.cache_read_tokens, self.cache_write_tokens)
        if not stream:
            return await response.reply(200, orjson.dumps(answer))
        frames = [eventstream.event(name, payload) for name, payload in converse_answers.stream_events(answer)]
        fault = response.fault
        if fault is not None and fault.kind == "stream_error":
            k = max(0, min(fault.after_chunks, len(frames) - 1))
            frames = [*frames[:k], eventstream.exception("modelStreamErrorException",
                                                         fault.message or "The model stream failed.")]
        await response.stream(frames, content_type=EVENT_STREAM)

    def _model_list(self) -> bytes:
        # foundation models only: no inference profiles (``us.…``)
        ids = [*(m for m in self.converse_models if m.split(".", 1)[0] not in ("us", "eu", "apac", "global")),
               "anthropic.claude-3-5-haiku-20241022-v1:0", "anthropic.claude-sonnet-4-5-20250929-v1:0"]
        summaries = [{"modelArn": f"arn:aws:bedrock:{self.region}::foundation-model/{m}", "modelId": m,
                      "modelName": m, "providerName": m.split(".", 1)[0].capitalize(), "inputModalities": ["TEXT"],
                      "outputModalities": ["TEXT"], "responseStreamingSupported": True,
                      "customizationsSupported": [], "inferenceTypesSupported": ["ON_DEMAND"],
                      "modelLifecycle": {"status": "ACTIVE"}} for m in ids]
        return orjson.dumps({"modelSummaries": summaries})
