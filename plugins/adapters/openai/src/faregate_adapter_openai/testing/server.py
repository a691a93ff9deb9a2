"""A fake OpenAI Chat Completions server on a real loopback TCP port.

Faithful to OpenAI's documented wire format (``chat.completion`` /
``chat.completion.chunk`` / ``{"error": {...}}`` objects validate against the official
OpenAPI spec, see :mod:`faregate_adapter_openai.testing.schema`), deterministic (see
:mod:`faregate_adapter_openai.testing.chat` for what it answers), with faults injectable
per request. It is a :class:`~faregate.testing.fake_server.FakeServer`, so socket-level
faults (TCP RST, hangs, cut streams) are possible and it is cheap enough to be the
upstream of load benchmarks (``python -m faregate_adapter_openai.testing.fake``).

Usage::

    async with FakeOpenAI(api_key="sk-test") as fake:
        client = openai.AsyncOpenAI(base_url=fake.base_url + "/v1", api_key="sk-test")
        fake.push_fault(Fault("status", status=429, retry_after="1"))
        fake.fail_next(500, "boom")  # the same, with a message
        ...

Routes: ``POST /v1/chat/completions``, ``POST /v1/responses`` and ``/v1/responses/compact``
(see :mod:`faregate_adapter_openai.testing.responses`), ``GET /v1/models``, ``GET /v1/models/{id}``, and the
legacy billing pair new-api reads balances from: ``GET /v1/dashboard/billing/subscription``
(:attr:`FakeOpenAI.hard_limit_usd`, :attr:`FakeOpenAI.has_payment_method`) and ``GET
/v1/dashboard/billing/usage?start_date=YYYY-MM-DD&end_date=YYYY-MM-DD`` (at most 100 days;
:attr:`FakeOpenAI.total_usage` cents), ``GET /v1/realtime`` upgraded to a Realtime API WebSocket
(:mod:`faregate_adapter_openai.testing.realtime`), the balance APIs of DeepSeek, OpenRouter,
SiliconFlow and Moonshot (:mod:`.balances`, :attr:`FakeOpenAI.balances`); anything else is
OpenAI's 404. With a key set, ``Authorization: Bearer <key>`` is required (else OpenAI's 401,
the key masked).

A :class:`Vendor` makes it another vendor's OpenAI-compatible API (its root, paths of its
own, the fields it refuses, when it reports a stream's usage); :data:`DEEPSEEK` is DeepSeek's
(FIM completions at ``/beta/completions``); :mod:`.azure` is Azure OpenAI's.

Every chat request body is validated against OpenAI's published request schema
(``CreateChatCompletionRequest``, :mod:`.schema`): a violation is answered 400
``invalid_request_error`` with the schema error, and recorded in :attr:`FakeOpenAI.violations`
so a test cannot pass unnoticed (the ``fake_openai`` fixture asserts it empty at
teardown). ``validate_requests=False`` turns this off (the load benchmark's fake).

Faults (``Fault.kind``): the shared ones of :mod:`faregate.testing.fake_server` (``status``
answers OpenAI's error body for the status, ``stream_cut`` / ``stall`` act on chat
answers, ``malformed_json`` sends ``{"id": "x", "choices": [``), plus

``html``             reply ``status`` with a Cloudflare-style ``text/html`` page
``malformed_chunk``  stream: ``after_chunks`` chunks, then (after ``delay`` seconds when
                     given) one ``data:`` line with truncated JSON, then ``[DONE]``
                     (non-stream: as ``malformed_json``)
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Literal

import orjson

from faregate.testing import fake_server
from faregate.testing.fake_server import FakeServer, Request, Response
from faregate_adapter_openai.testing import alpha_search, audio, balances, completions, images, realtime
from faregate_adapter_openai.testing.chat import (
    ChatInputError,
    completion_body,
    completion_frames,
    read_chat,
    wants_stream,
)
from faregate_adapter_openai.testing.embeddings import embeddings_body
from faregate_adapter_openai.testing.errors import auth_error_message, error_body, html_page
from faregate_adapter_openai.testing.moderations import moderations_body
from faregate_adapter_openai.testing.responses import compact_body, read_responses, response_body, response_frames

__all__ = ["DEEPSEEK", "DEFAULT_MODELS", "FAULT_KINDS", "FakeOpenAI", "Fault", "Vendor"]

FAULT_KINDS = fake_server.FAULT_KINDS | {"html", "malformed_chunk"}
DEFAULT_MODELS = ("gpt-4o", "gpt-4o-mini", "gpt-3.5-turbo")
MALFORMED_JSON = b'{"id": "x", "choices": ['
MODEL_CREATED = 1715367049
#: the request bodies validated against the spec, by path: the schema component of each
SCHEMA_CHECKED = {"/v1/chat/completions": "CreateChatCompletionRequest", "/v1/embeddings": "CreateEmbeddingRequest",
                  "/v1/moderations": "CreateModerationRequest", "/v1/completions": "CreateCompletionRequest",
                  images.GENERATIONS_PATH: "CreateImageRequest"}  # edits: multipart or JSON, images.edit_problem
SCHEMA_CHECKED.update({"/v1/responses": "CreateResponse", "/v1/responses/compact": "CompactResponseMethodPublicBody"})


@dataclass(frozen=True, slots=True)
class Vendor:
    """What makes the fake another vendor's OpenAI-compatible API: the root its OpenAI paths
    live under (Zhipu's ``/api/paas/v4``, Groq's ``/openai/v1``), ``paths`` of its own (a
    path under the base URL → the OpenAI path it serves, which then answers 404 under the
    root: DeepSeek's FIM completions), the body fields it refuses (answered 400
    ``Unrecognized request argument supplied`` and recorded as a violation, as a vendor
    refusing ``stream_options`` does), ``check``: what else it refuses (``(OpenAI path,
    body)`` → the reason, answered and recorded the same way), when a stream ends with a
    usage chunk (``asked``: as OpenAI, on ``stream_options.include_usage``; ``always``;
    ``never``), and whether ``GET {root}/models`` lists its models."""

    root: str = "/v1"
    refuses: frozenset[str] = frozenset()
    usage_chunk: Literal["asked", "always", "never"] = "asked"
    lists_models: bool = True
    paths: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    check: Callable[[str, Any], str | None] | None = None

    def refused_field(self, body: Any) -> str | None:
        if isinstance(body, dict):
            for name in sorted(self.refuses):
                if name in body:
                    return name
        return None

    def stream_usage(self, asked: bool) -> bool:
        return asked if self.usage_chunk == "asked" else self.usage_chunk == "always"


#: DeepSeek: OpenAI's paths under ``/v1``, but text completions only as its FIM beta, at
#: ``/beta/completions`` (where new-api and the gateway send them), with its own field list
DEEPSEEK = Vendor(paths=MappingProxyType({"/beta/completions": "/v1/completions"}), check=completions.deepseek_problem)


class Fault(fake_server.Fault):
    """A fault of the fake OpenAI server: the shared kinds plus ``html`` and ``malformed_chunk``."""

    kinds: ClassVar[frozenset[str]] = FAULT_KINDS


class FakeOpenAI(FakeServer):
    """Fake OpenAI server. See the module docstring."""

    fault_type = Fault
    malformed_json = MALFORMED_JSON
    request_id_header = b"x-request-id"

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = None,
                 key: str | None = None, latency: float = 0.0, models: Iterable[str] = (),
                 validate_requests: bool = True, vendor: Vendor | None = None) -> None:
        """``api_key`` (or ``key``, its name on every fake) is the key it requires (None:
        any); ``latency`` seconds pass before every answer; ``models`` are listed after
        :data:`DEFAULT_MODELS`; ``validate_requests`` checks chat bodies against the spec;
        ``vendor`` makes it another vendor's OpenAI-compatible API (:class:`Vendor`)."""
        super().__init__(host, port, key=key if key is not None else api_key, latency=latency,
                         validate_requests=validate_requests)
        self.vendor = vendor or Vendor()
        self.models: list[str] = list(dict.fromkeys([*DEFAULT_MODELS, *models]))
        self._models_body = b""
        #: what the billing endpoints report: balance = hard_limit_usd - total_usage / 100
        self.hard_limit_usd = 120.0
        self.has_payment_method = True
        self.total_usage = 2050.0  # cents
        #: the completion tokens each chat answer is billed at (a model that writes long answers),
        #: or the request's ``max_completion_tokens`` / ``max_tokens`` when smaller; None: its length
        self.answer_tokens: int | None = None
        #: what the vendors' own balance APIs report (DeepSeek, OpenRouter, SiliconFlow, Moonshot)
        self.balances = balances.VendorBalances()
        #: the POST endpoints it serves, by path (each endpoint family adds its own)
        self.post_routes: dict[str, Callable[[Request, Response], Awaitable[None]]] = {
            "/v1/chat/completions": self._chat,
            "/v1/embeddings": self._embeddings,
            "/v1/moderations": self._moderations,
            "/v1/completions": self._completions,
            alpha_search.PATH: self._alpha_search,
            images.GENERATIONS_PATH: self._images,
            images.EDITS_PATH: self._images,
            "/v1/responses": self._responses,
            "/v1/responses/compact": self._compact,
        }
        #: the audio endpoints (:mod:`.audio`) and what a test may change about their answers
        self.post_routes.update(dict.fromkeys(audio.PATHS, self._audio))
        self.audio = audio.AudioKnobs()
        #: the Realtime API's WebSocket sessions (:mod:`.realtime`) and what a test may change about them
        self.realtime = realtime.RealtimeKnobs()

    @property
    def api_key(self) -> str | None:
        return self.key

    async def start(self) -> None:
        self._models_body = orjson.dumps({"object": "list", "data": [
            {"id": m, "object": "model", "created": MODEL_CREATED, "owned_by": "openai"} for m in self.models]})
        await super().start()

    def error_body(self, status: int, message: str | None = None) -> bytes:
        return error_body(status, message)

    def load_schema(self) -> None:
        from faregate_adapter_openai.testing.schema import SPEC  # needs faregate[testing]

        SPEC.load()

    def schema_problem(self, request: Request) -> str | None:
        if request.method == "POST" and request.path in audio.PATHS:  # multipart forms as OpenAI reads them
            return audio.problem(request)
        if request.method == "POST" and request.path == alpha_search.PATH:  # no OpenAPI document: Codex's fields
            return alpha_search.problem(request.json)
        if request.method == "POST" and request.path == images.EDITS_PATH:  # its schema depends on the body's type
            return images.edit_problem(request)
        if request.method != "POST" or request.path not in SCHEMA_CHECKED:
            return None
        from faregate_adapter_openai.testing.schema import request_errors  # needs faregate[testing]

        return request_errors(request.json, SCHEMA_CHECKED[request.path])

    async def answer_fault(self, request: Request, response: Response) -> bool:
        fault = response.fault
        assert fault is not None
        self.check_request(request)
        if fault.kind == "html":
            extra = [(b"server", b"cloudflare")]
            if fault.retry_after is not None:
                extra.append((b"retry-after", fault.retry_after.encode()))
            body = fault.body if fault.body is not None else html_page(fault.status)
            response.send(fault.status, body, fake_server.HTML, extra)
            return True
        if fault.kind == "malformed_chunk" and not wants_stream(request.json):
            response.send(200, fault.body if fault.body is not None else MALFORMED_JSON)
            return True
        return await super().answer_fault(request, response)

    async def answer(self, request: Request, response: Response) -> None:
        if self.key is not None and request.headers.get("authorization") != f"Bearer {self.key}":
            message = auth_error_message(request.headers.get("authorization", ""))
            return response.send(401, error_body(401, message, type="invalid_request_error", code="invalid_api_key"))
        vendor = self.vendor
        own = vendor.paths.get(request.path)
        if own is not None:  # a path of the vendor's own, outside its root
            request.path = own
        else:
            if vendor.root != "/v1":  # another vendor's root: its paths are OpenAI's there, nowhere else
                if not request.path.startswith(vendor.root + "/"):
                    return response.send(404, error_body(404, f"Invalid URL ({request.method} {request.path})",
                                                         type="invalid_request_error", code=None))
                request.path = "/v1" + request.path[len(vendor.root):]
            if request.path in vendor.paths.values():  # served at the vendor's own path only
                return response.send(404, error_body(404, f"Invalid URL ({request.method} {request.path})",
                                                     type="invalid_request_error", code=None))
        refused = vendor.refused_field(request.json) if request.method == "POST" else None
        if refused is not None:
            self.violations.append({"path": request.path, "error": f"refused field {refused}", "json": request.json})
            return response.send(400, error_body(400, f"Unrecognized request argument supplied: {refused}",
                                                 type="invalid_request_error", param=refused, code=None))
        problem = vendor.check(request.path, request.json) if vendor.check and request.method == "POST" else None
        if problem is not None:
            self.violations.append({"path": request.path, "error": problem, "json": request.json})
            return response.send(400, error_body(400, problem, type="invalid_request_error", code=None))
        await self.route(request, response)

    async def route(self, request: Request, response: Response) -> None:
        """Answer an authenticated request at OpenAI's ``request.path``."""
        path, method = request.path, request.method
        if balances.answer(self.balances, request, response):  # the vendors' own balance APIs
            return None
        if method == "POST" and path in self.post_routes:
            return await self.post_routes[path](request, response)
        if method == "GET" and path == realtime.PATH:
            return await realtime.answer(self, request, response)
        if method == "GET" and path == "/v1/models" and self.vendor.lists_models:
            return response.send(200, self._models_body)
        if method == "GET" and path.startswith("/v1/dashboard/billing/"):
            return self._billing(request, response)
        if method == "GET" and path.startswith("/v1/models/"):
            model = path[len("/v1/models/") :]
            if model in self.models:
                return response.send(200, orjson.dumps({"id": model, "object": "model", "created": MODEL_CREATED,
                                                        "owned_by": "openai"}))
            return response.send(404, error_body(404, f"The model '{model}' does not exist",
                                                 type="invalid_request_error", param="model",
                                                 code="model_not_found"))
        response.send(404, error_body(404, f"Invalid URL ({method} {path})", type="invalid_request_error",
                                      code=None))

    def _billing(self, request: Request, response: Response) -> None:
        if request.path == "/v1/dashboard/billing/subscription":
            limit = self.hard_limit_usd
            return response.send(200, orjson.dumps({
                "object": "billing_subscription", "has_payment_method": self.has_payment_method,
                "soft_limit_usd": limit * 0.8, "hard_limit_usd": limit, "system_hard_limit_usd": limit,
                "access_until": 0}))
        if request.path != "/v1/dashboard/billing/usage":
            return response.send(404, error_body(404, f"Invalid URL (GET {request.path})",
                                                 type="invalid_request_error", code=None))
        try:
            start = datetime.date.fromisoformat(request.query.get("start_date", ""))
            end = datetime.date.fromisoformat(request.query.get("end_date", ""))
        except ValueError:
            return response.send(400, error_body(400, "start_date and end_date must be dates (YYYY-MM-DD)",
                                                 type="invalid_request_error", code=None))
        if not 0 <= (end - start).days <= 100:
            return response.send(400, error_body(400, "the usage window must span 0 to 100 days",
                                                 type="invalid_request_error", code=None))
        response.send(200, orjson.dumps({"object": "list", "daily_costs": [], "total_usage": self.total_usage}))

    async def _embeddings(self, request: Request, response: Response) -> None:
        if not self._schema_refused(request, response):
            await response.reply(200, embeddings_body(request.json))

    async def _images(self, request: Request, response: Response) -> None:
        if not self._schema_refused(request, response):
            await images.answer(request, response)

    async def _alpha_search(self, request: Request, response: Response) -> None:
        if not self._schema_refused(request, response):
            alpha_search.answer(request, response)

    async def _moderations(self, request: Request, response: Response) -> None:
        if not self._schema_refused(request, response):
            await response.reply(200, moderations_body(request.json, request.number))

    async def _completions(self, request: Request, response: Response) -> None:
        """Legacy text completions (:mod:`.completions`); ``malformed_chunk`` acts on its streams."""
        if self._schema_refused(request, response):
            return
        refused = completions.completion_problem(request.json)
        if refused is not None:
            return response.send(400, refused)
        answer = completions.read_completion(request.json, request.number, self.id_prefix)
        if request.json.get("stream") is not True:
            return await response.reply(200, completions.completion_body(answer))
        options = request.json.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        frames = completions.completion_frames(answer, self.vendor.stream_usage(include_usage))
        fault = response.fault
        if fault is not None and fault.kind == "malformed_chunk":
            k = max(0, min(fault.after_chunks, len(frames) - 1))
            frames = [*frames[:k], b"data: " + (fault.body or MALFORMED_JSON) + b"\n\n", frames[-1]]
            return await response.stream(frames, pause=(k, fault.delay) if fault.delay else None)
        await response.stream(frames)

    def _schema_refused(self, request: Request, response: Response) -> bool:
        violation = self.check_request(request)
        if violation is None:
            return False
        response.send(400, error_body(400, f"Invalid request: {violation}", type="invalid_request_error",
                                      code="invalid_request_schema"))
        return True

    async def _chat(self, request: Request, response: Response) -> None:
        violation = self.check_request(request)
        try:  # OpenAI's own messages for the mistakes it names, then the schema's
            completion = read_chat(request.json, request.number, self.id_prefix, self.answer_tokens)
        except ChatInputError as exc:
            return response.send(400, exc.body)
        if violation is not None:
            return response.send(400, error_body(400, f"Invalid request: {violation}",
                                                 type="invalid_request_error", code="invalid_request_schema"))
        if not completion.stream:
            return await response.reply(200, completion_body(completion))
        completion.include_usage = self.vendor.stream_usage(completion.include_usage)
        frames = completion_frames(completion)
        fault = response.fault
        if fault is not None and fault.kind == "malformed_chunk":
            k = max(0, min(fault.after_chunks, len(frames) - 1))
            bad = fault.body if fault.body is not None else MALFORMED_JSON
            frames = [*frames[:k], b"data: " + bad + b"\n\n", frames[-1]]
            if fault.delay:  # the client sees the first chunks before the bad one
                return await response.stream(frames, pause=(k, fault.delay))
        await response.stream(frames)

    async def _responses(self, request: Request, response: Response) -> None:
        violation = self.check_request(request)
        try:  # OpenAI's own messages for the mistakes it names, then the schema's
            answer = read_responses(request.json, request.number, self.id_prefix)
        except ChatInputError as exc:
            return response.send(400, exc.body)
        if violation is not None:
            return response.send(400, error_body(400, f"Invalid request: {violation}",
                                                 type="invalid_request_error", code="invalid_request_schema"))
        if not answer.stream:
            return await response.reply(200, response_body(answer))
        frames = response_frames(answer)
        fault = response.fault
        if fault is not None and fault.kind == "malformed_chunk":  # its body may be an ``error`` event's data
            k = max(0, min(fault.after_chunks, len(frames) - 1))
            frames = [*frames[:k], b"data: " + (fault.body or MALFORMED_JSON) + b"\n\n", frames[-1]]
        await response.stream(frames)

    async def _audio(self, request: Request, response: Response) -> None:
        await audio.answer(self, request, response)

    async def _compact(self, request: Request, response: Response) -> None:
        if self._schema_refused(request, response):
            return
        try:
            body = compact_body(request.json, request.number, self.id_prefix)
        except ChatInputError as exc:
            return response.send(400, exc.body)
        await response.reply(200, body)
