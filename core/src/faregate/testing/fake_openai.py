"""A fake OpenAI Chat Completions server on a real loopback TCP port.

Faithful to OpenAI's documented wire format (``chat.completion`` /
``chat.completion.chunk`` / ``{"error": {...}}`` objects validate against the official
OpenAPI spec), deterministic, and with faults injectable per request.  It is a raw
``asyncio.start_server`` with a minimal HTTP/1.1 implementation (keep-alive,
Content-Length or chunked request bodies, chunked or close-delimited streaming) so that
socket-level faults (TCP RST, hangs, cut streams) are possible and it is cheap enough
to serve as the upstream in load benchmarks.

Usage::

    async with FakeOpenAI(api_key="sk-test") as fake:
        client = openai.AsyncOpenAI(base_url=fake.base_url + "/v1", api_key="sk-test")
        fake.push_fault(Fault("status", status=429, retry_after="1"))
        ...

Faults (``Fault.kind``), taken FIFO from ``fake.faults`` (one per request) or from the
request headers ``x-fake-fault: <kind>`` [+ ``x-fake-status``, ``x-fake-delay``,
``x-fake-after-chunks``, ``x-fake-retry-after``] which take precedence over the queue:

``status``           reply ``status`` with an OpenAI error body (+ ``Retry-After``)
``html``             reply ``status`` with a Cloudflare-style ``text/html`` page
``slow_first_byte``  sleep ``delay`` before the status line, then answer normally
``stream_cut``       stream: ``after_chunks`` chunks then close (no terminating chunk,
                     no ``[DONE]``); non-stream: half of the body then close
``malformed_json``   200 ``application/json`` with a truncated JSON body
``malformed_chunk``  stream: ``after_chunks`` chunks, then one ``data:`` line with
                     truncated JSON, then ``[DONE]`` (non-stream: as ``malformed_json``)
``reset``            TCP RST (SO_LINGER 0) before sending anything
``hang``             never answer (until ``stop()``)
``stall``            stream: ``after_chunks`` chunks, sleep ``delay``, then the rest;
                     non-stream: headers + half of the body, sleep ``delay``, the rest

CLI (benchmarks)::

    python -m faregate.testing.fake_openai --port 9000 [--latency 0.0] [--api-key K]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import secrets
import socket
import struct
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Self

import orjson

__all__ = ["DEFAULT_MODELS", "FAULT_KINDS", "FakeOpenAI", "Fault", "error_body", "main"]

FAULT_KINDS = frozenset(
    {
        "status",
        "html",
        "slow_first_byte",
        "stream_cut",
        "malformed_json",
        "malformed_chunk",
        "reset",
        "hang",
        "stall",
    }
)

DEFAULT_MODELS = ("gpt-4o", "gpt-4o-mini", "gpt-3.5-turbo")
MAX_RECORDED_REQUESTS = 1000
MAX_BODY = 64 * 1024 * 1024
REPLY_PREFIX = "Hello from fake-openai! You said: "
TOOL_ARGUMENTS = '{"city": "Paris"}'
SYSTEM_FINGERPRINT = "fp_fake0openai"
MALFORMED_JSON = b'{"id": "x", "choices": ['

_HTTP_DATE_CACHE: list[Any] = [0, b""]


@dataclass
class Fault:
    """One injected fault; see the module docstring for the kinds."""

    kind: str
    status: int = 500
    retry_after: str | None = None
    delay: float = 0.0
    after_chunks: int = 2
    body: bytes | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {sorted(FAULT_KINDS)}")


# --------------------------------------------------------------------------- errors

# status -> (message, type, code) as OpenAI sends them
_ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Bad request.", "invalid_request_error", None),
    401: (
        "Incorrect API key provided: sk-***. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    ),
    403: (
        "Country, region, or territory not supported",
        "request_forbidden",
        "unsupported_country_region_territory",
    ),
    404: (
        "The model does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    ),
    408: ("Request timed out.", "timeout", None),
    409: ("Conflict.", "invalid_request_error", None),
    413: ("Request too large.", "invalid_request_error", None),
    422: ("Unprocessable entity.", "invalid_request_error", None),
    429: (
        "Rate limit reached for requests. Please try again in 1s. "
        "Visit https://platform.openai.com/account/rate-limits to learn more.",
        "requests",
        "rate_limit_exceeded",
    ),
    500: (
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
    ),
    502: ("Bad gateway.", "server_error", None),
    503: (
        "The engine is currently overloaded, please try again later.",
        "server_error",
        None,
    ),
    504: ("Gateway timeout.", "server_error", None),
}


_UNSET: Any = object()


def error_body(
    status: int,
    message: str | None = None,
    *,
    type: str | None = None,
    param: str | None = None,
    code: str | None = _UNSET,
) -> bytes:
    """An OpenAI error JSON body (``ErrorResponse``) for ``status``.

    Unspecified ``message``/``type``/``code`` take OpenAI's usual values for ``status``.
    """
    entry = _ERRORS.get(status)
    if entry is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        entry = (
            phrase + ".",
            "server_error" if status >= 500 else "invalid_request_error",
            None,
        )
    return orjson.dumps(
        {
            "error": {
                "message": entry[0] if message is None else message,
                "type": entry[1] if type is None else type,
                "param": param,
                "code": entry[2] if code is _UNSET else code,
            }
        }
    )


def _html_page(status: int) -> bytes:
    if status == 524:
        title, detail = (
            "A timeout occurred",
            "The origin web server timed out responding to this request.",
        )
    elif status == 502:
        title, detail = "Bad gateway", "The web server reported a bad gateway error."
    elif status == 503:
        title, detail = (
            "Service unavailable",
            "The web server is temporarily unavailable.",
        )
    else:
        title, detail = "Error", "The web server returned an unknown error."
    return (
        '<!DOCTYPE html>\n<!--[if lt IE 7]> <html class="no-js ie6 oldie" lang="en-US"> <![endif]-->\n'
        f'<html lang="en-US"><head><title>api.openai.com | {status}: {title}</title>'
        '<meta charset="UTF-8" /></head><body><div id="cf-wrapper"><div id="cf-error-details">'
        f'<h1><span class="cf-error-type">{title}</span> <span class="code-label">Error code {status}</span></h1>'
        f"<p>{detail}</p><p>Cloudflare Ray ID: <strong>8f0fake0fake0000</strong></p>"
        "</div></div></body></html>\n"
    ).encode()


# --------------------------------------------------------------------------- http helpers

_REASONS: dict[int, bytes] = {}


def _status_line(status: int) -> bytes:
    line = _REASONS.get(status)
    if line is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = {
                520: "Unknown Error",
                521: "Web Server Is Down",
                522: "Connection Timed Out",
                523: "Origin Is Unreachable",
                524: "A Timeout Occurred",
            }.get(status, "Unknown")
        line = _REASONS[status] = f"HTTP/1.1 {status} {phrase}\r\n".encode()
    return line


def _http_date() -> bytes:
    now = int(time.time())
    if _HTTP_DATE_CACHE[0] != now:
        _HTTP_DATE_CACHE[0] = now
        _HTTP_DATE_CACHE[1] = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now)).encode()
    return _HTTP_DATE_CACHE[1]


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


class _BadRequest(Exception):
    pass


class _Request:
    __slots__ = ("body", "headers", "keep_alive", "method", "path", "target", "version")

    def __init__(
        self,
        method: str,
        target: str,
        version: str,
        headers: dict[str, str],
        body: bytes,
    ) -> None:
        self.method = method
        self.target = target
        self.path = target.split("?", 1)[0]
        self.version = version
        self.headers = headers
        self.body = body
        conn = headers.get("connection", "").lower()
        if version == "HTTP/1.0":
            self.keep_alive = "keep-alive" in conn
        else:
            self.keep_alive = "close" not in conn


class _Conn:
    """One response in progress; knows whether to use chunked or close-delimited streaming."""

    __slots__ = ("chunked", "keep_alive", "req", "request_id", "writer")

    def __init__(self, writer: asyncio.StreamWriter, req: _Request, request_id: str) -> None:
        self.writer = writer
        self.req = req
        self.keep_alive = req.keep_alive
        self.chunked = False
        self.request_id = request_id

    def head(
        self,
        status: int,
        content_type: bytes,
        length: int | None,
        extra: Iterable[tuple[bytes, bytes]] = (),
    ) -> bytes:
        parts = [
            _status_line(status),
            b"date: ",
            _http_date(),
            b"\r\n",
            b"content-type: ",
            content_type,
            b"\r\n",
            b"x-request-id: ",
            self.request_id.encode(),
            b"\r\n",
        ]
        for k, v in extra:
            parts += (k, b": ", v, b"\r\n")
        if length is not None:
            parts += (b"content-length: ", str(length).encode(), b"\r\n")
        elif self.req.version != "HTTP/1.0":
            self.chunked = True
            parts.append(b"transfer-encoding: chunked\r\n")
        else:
            self.keep_alive = False
        parts.append(b"connection: keep-alive\r\n\r\n" if self.keep_alive else b"connection: close\r\n\r\n")
        return b"".join(parts)

    def send(
        self,
        status: int,
        content_type: bytes,
        body: bytes,
        extra: Iterable[tuple[bytes, bytes]] = (),
    ) -> None:
        self.writer.write(self.head(status, content_type, len(body), extra) + body)

    def frame(self, data: bytes) -> bytes:
        return _chunk(data) if self.chunked else data

    def end(self) -> bytes:
        return b"0\r\n\r\n" if self.chunked else b""


_JSON = b"application/json"
_SSE = b"text/event-stream; charset=utf-8"
_HTML = b"text/html; charset=UTF-8"


# --------------------------------------------------------------------------- chat logic


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _split_words(text: str) -> list[str]:
    """Split ``text`` into OpenAI-like deltas (leading-space words), at least 4 when possible."""
    words = text.split(" ")
    pieces = [words[0]] + [" " + w for w in words[1:]]
    pieces = [p for p in pieces if p]
    if len(pieces) >= 4 or len(text) < 4:
        return pieces or [text]
    step = -(-len(text) // 4)
    return [text[i : i + step] for i in range(0, len(text), step)]


def _split_args(arguments: str) -> list[str]:
    step = max(1, -(-len(arguments) // 4))
    return [arguments[i : i + step] for i in range(0, len(arguments), step)]


def _tool_call_name(body: dict[str, Any], messages: list[Any]) -> str | None:
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools:
        return None
    choice = body.get("tool_choice")
    if choice == "none":
        return None
    named = None
    if isinstance(choice, dict):
        fn = choice.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            named = fn["name"]
    forced = named is not None or choice == "required"
    if not forced:
        last = messages[-1] if messages else None
        if not (
            isinstance(last, dict)
            and last.get("role") == "user"
            and "call tool" in _text_of(last.get("content")).lower()
        ):
            return None
    if named is not None:
        return named
    first = tools[0] if isinstance(tools[0], dict) else {}
    fn = first.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        return fn["name"]
    return str(first.get("name") or "tool")


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


# --------------------------------------------------------------------------- the server


class FakeOpenAI:
    """Fake OpenAI server.  See the module docstring."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str | None = None,
        latency: float = 0.0,
        models: Iterable[str] = (),
    ) -> None:
        self.host = host
        self.port = port
        self.api_key = api_key
        self.latency = latency
        self.models: list[str] = list(dict.fromkeys([*DEFAULT_MODELS, *models]))
        self.requests: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping: asyncio.Event | None = None
        self._ids = itertools.count(1)
        self._id_prefix = secrets.token_hex(6)
        self._auth_header = f"Bearer {api_key}" if api_key is not None else None
        self._models_body = b""

    # ----------------------------------------------------------------- lifecycle
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        if self._server is not None:
            return
        self._stopping = asyncio.Event()
        created = 1715367049
        self._models_body = orjson.dumps(
            {
                "object": "list",
                "data": [
                    {
                        "id": m,
                        "object": "model",
                        "created": created,
                        "owned_by": "openai",
                    }
                    for m in self.models
                ],
            }
        )
        self._server = await asyncio.start_server(
            self._handle,
            self.host,
            self.port,
            limit=1 << 20,
            backlog=4096,
            reuse_address=True,
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        assert self._stopping is not None
        self._stopping.set()
        server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def push_fault(self, fault: Fault) -> None:
        self.faults.append(fault)

    # ----------------------------------------------------------------- http
    async def _read_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> _Request | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        except asyncio.LimitOverrunError as exc:
            raise _BadRequest("request header too large") from exc
        lines = head[:-4].decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ", 2)
        except ValueError as exc:
            raise _BadRequest("malformed request line") from exc
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise _BadRequest("malformed header line")
            headers[name.strip().lower()] = value.strip()
        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = await self._read_chunked(reader)
        else:
            try:
                length = int(headers.get("content-length", "0") or 0)
            except ValueError as exc:
                raise _BadRequest("bad content-length") from exc
            if length < 0 or length > MAX_BODY:
                raise _BadRequest("bad content-length")
            body = await reader.readexactly(length) if length else b""
        return _Request(method, target, version, headers, body)

    async def _read_chunked(self, reader: asyncio.StreamReader) -> bytes:
        parts = []
        total = 0
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError as exc:
                raise _BadRequest("bad chunk size") from exc
            if size == 0:
                # trailers until empty line
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass
                return b"".join(parts)
            total += size
            if total > MAX_BODY:
                raise _BadRequest("body too large")
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while True:
                try:
                    req = await self._read_request(reader, writer)
                except _BadRequest as exc:
                    body = error_body(400, str(exc))
                    writer.write(
                        b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
                        b"content-length: %d\r\nconnection: close\r\n\r\n%b" % (len(body), body)
                    )
                    break
                if req is None:
                    break
                if not await self._respond(reader, writer, req):
                    break
                await writer.drain()
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            OSError,
        ):
            pass
        except asyncio.CancelledError:
            # Only stop() cancels handlers.  Finish the task normally: asyncio's
            # client_connected_cb done-callback calls task.exception(), which would
            # log a spurious CancelledError for a cancelled task.
            writer.transport.abort()
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            if not writer.transport.is_closing():
                writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _record(self, req: _Request) -> Any:
        parsed: Any = None
        if req.body:
            try:
                parsed = orjson.loads(req.body)
            except orjson.JSONDecodeError:
                parsed = None
        reqs = self.requests
        if len(reqs) >= MAX_RECORDED_REQUESTS:
            del reqs[: len(reqs) - MAX_RECORDED_REQUESTS + 1]
        reqs.append(
            {
                "method": req.method,
                "path": req.path,
                "headers": req.headers,
                "json": parsed,
            }
        )
        return parsed

    def _select_fault(self, headers: dict[str, str]) -> Fault | None:
        kind = headers.get("x-fake-fault")
        if kind:
            fault = Fault(kind.strip().lower())
            if "x-fake-status" in headers:
                fault.status = int(headers["x-fake-status"])
            if "x-fake-delay" in headers:
                fault.delay = float(headers["x-fake-delay"])
            if "x-fake-after-chunks" in headers:
                fault.after_chunks = int(headers["x-fake-after-chunks"])
            if "x-fake-retry-after" in headers:
                fault.retry_after = headers["x-fake-retry-after"]
            return fault
        if self.faults:
            return self.faults.pop(0)
        return None

    async def _respond(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, req: _Request) -> bool:
        """Answer one request; return False if the connection must be closed."""
        parsed = self._record(req)
        n = next(self._ids)
        conn = _Conn(writer, req, f"req_{self._id_prefix}{n:012d}")
        try:
            fault = self._select_fault(req.headers)
        except ValueError as exc:
            conn.send(400, _JSON, error_body(400, f"invalid x-fake-* header: {exc}"))
            return conn.keep_alive

        if self.latency > 0:
            await asyncio.sleep(self.latency)

        if fault is not None:
            kind = fault.kind
            if kind == "reset":
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return False
            if kind == "hang":
                assert self._stopping is not None
                await self._stopping.wait()
                writer.transport.abort()
                return False
            if kind == "slow_first_byte":
                await asyncio.sleep(fault.delay)
            elif kind == "status":
                extra = [(b"retry-after", fault.retry_after.encode())] if fault.retry_after is not None else []
                conn.send(
                    fault.status,
                    _JSON,
                    fault.body if fault.body is not None else error_body(fault.status),
                    extra,
                )
                return conn.keep_alive
            elif kind == "html":
                extra = [(b"server", b"cloudflare")]
                if fault.retry_after is not None:
                    extra.append((b"retry-after", fault.retry_after.encode()))
                conn.send(
                    fault.status,
                    _HTML,
                    fault.body if fault.body is not None else _html_page(fault.status),
                    extra,
                )
                return conn.keep_alive
            elif kind == "malformed_json" or (kind == "malformed_chunk" and not _wants_stream(parsed)):
                conn.send(200, _JSON, fault.body if fault.body is not None else MALFORMED_JSON)
                return conn.keep_alive

        if self._auth_header is not None and req.headers.get("authorization") != self._auth_header:
            return self._send_auth_error(conn)

        path = req.path
        if path == "/v1/chat/completions" and req.method == "POST":
            return await self._chat(conn, parsed, fault, n)
        if req.method == "GET":
            if path == "/v1/models":
                conn.send(200, _JSON, self._models_body)
                return conn.keep_alive
            if path.startswith("/v1/models/"):
                model = path[len("/v1/models/") :]
                if model in self.models:
                    conn.send(
                        200,
                        _JSON,
                        orjson.dumps(
                            {
                                "id": model,
                                "object": "model",
                                "created": 1715367049,
                                "owned_by": "openai",
                            }
                        ),
                    )
                else:
                    conn.send(
                        404,
                        _JSON,
                        error_body(
                            404,
                            f"The model '{model}' does not exist",
                            type="invalid_request_error",
                            param="model",
                            code="model_not_found",
                        ),
                    )
                return conn.keep_alive
        conn.send(
            404,
            _JSON,
            error_body(
                404,
                f"Invalid URL ({req.method} {path})",
                type="invalid_request_error",
                code=None,
            ),
        )
        return conn.keep_alive

    def _send_auth_error(self, conn: _Conn) -> bool:
        auth = conn.req.headers.get("authorization", "")
        key = auth[7:] if auth.lower().startswith("bearer ") else auth
        if key:
            shown = key[:3] + "*" * max(0, len(key) - 7) + key[-4:] if len(key) > 8 else key
            message = (
                f"Incorrect API key provided: {shown}. "
                "You can find your API key at https://platform.openai.com/account/api-keys."
            )
        else:
            message = (
                "You didn't provide an API key. You need to provide your API key in an Authorization "
                "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field "
                "(with blank username) if you're accessing the API from your browser and are prompted for a "
                "username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."
            )
        conn.send(
            401,
            _JSON,
            error_body(401, message, type="invalid_request_error", code="invalid_api_key"),
        )
        return conn.keep_alive

    async def _chat(self, conn: _Conn, body: Any, fault: Fault | None, n: int) -> bool:
        if body is None or not isinstance(body, dict):
            if body is None:
                msg = (
                    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
                    "your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not "
                    "valid JSON.)"
                )
            else:
                msg = f"Invalid type for request body: expected an object, but got {type(body).__name__} instead."
            conn.send(400, _JSON, error_body(400, msg, type="invalid_request_error"))
            return conn.keep_alive
        model = body.get("model")
        if not isinstance(model, str) or not model:
            conn.send(
                400,
                _JSON,
                error_body(
                    400,
                    "you must provide a model parameter",
                    type="invalid_request_error",
                ),
            )
            return conn.keep_alive
        messages = body.get("messages")
        if messages is None:
            conn.send(
                400,
                _JSON,
                error_body(
                    400,
                    "Missing required parameter: 'messages'.",
                    type="invalid_request_error",
                    param="messages",
                    code="missing_required_parameter",
                ),
            )
            return conn.keep_alive
        if not isinstance(messages, list) or not messages:
            conn.send(
                400,
                _JSON,
                error_body(
                    400,
                    "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
                    "array instead."
                    if isinstance(messages, list)
                    else f"Invalid type for 'messages': expected an array, but got {type(messages).__name__} instead.",
                    type="invalid_request_error",
                    param="messages",
                    code="empty_array" if isinstance(messages, list) else "invalid_type",
                ),
            )
            return conn.keep_alive

        prompt_tokens = 0
        last_user = ""
        for m in messages:
            if not isinstance(m, dict):
                conn.send(
                    400,
                    _JSON,
                    error_body(
                        400,
                        "Invalid type for 'messages[0]': expected an object.",
                        type="invalid_request_error",
                        param="messages",
                        code="invalid_type",
                    ),
                )
                return conn.keep_alive
            text = _text_of(m.get("content"))
            prompt_tokens += max(1, len(text) // 4) + 3
            if m.get("role") == "user":
                last_user = text

        created = int(time.time())
        cid = f"chatcmpl-{self._id_prefix}{n:017d}"
        tool_name = _tool_call_name(body, messages)
        if tool_name is not None:
            content: str | None = None
            call_id = f"call_{self._id_prefix}{n:012d}"
            completion_tokens = max(1, (len(tool_name) + len(TOOL_ARGUMENTS)) // 4)
            finish = "tool_calls"
        else:
            content = REPLY_PREFIX + last_user[:200]
            completion_tokens = max(1, len(content) // 4)
            finish = "stop"
            limit = body.get("max_completion_tokens")
            if limit is None:
                limit = body.get("max_tokens")
            if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit < completion_tokens:
                content = content[: limit * 4]
                completion_tokens = limit
                finish = "length"
        usage = _usage(prompt_tokens, completion_tokens)

        if _wants_stream(body):
            opts = body.get("stream_options")
            include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
            return await self._stream(
                conn,
                fault,
                cid,
                created,
                model,
                content,
                tool_name,
                call_id if tool_name is not None else "",
                finish,
                usage if include_usage else None,
            )

        message: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "refusal": None,
            "annotations": [],
        }
        if tool_name is not None:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool_name, "arguments": TOOL_ARGUMENTS},
                }
            ]
        payload = orjson.dumps(
            {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "logprobs": None,
                        "finish_reason": finish,
                    }
                ],
                "usage": usage,
                "service_tier": "default",
                "system_fingerprint": SYSTEM_FINGERPRINT,
            }
        )
        if fault is not None and fault.kind in ("stream_cut", "stall"):
            half = len(payload) // 2
            conn.writer.write(conn.head(200, _JSON, len(payload)) + payload[:half])
            if fault.kind == "stream_cut":
                await conn.writer.drain()
                conn.writer.close()
                return False
            await conn.writer.drain()
            await asyncio.sleep(fault.delay)
            conn.writer.write(payload[half:])
            return conn.keep_alive
        conn.send(200, _JSON, payload)
        return conn.keep_alive

    async def _stream(
        self,
        conn: _Conn,
        fault: Fault | None,
        cid: str,
        created: int,
        model: str,
        content: str | None,
        tool_name: str | None,
        call_id: str,
        finish: str,
        usage: dict[str, Any] | None,
    ) -> bool:
        base: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": SYSTEM_FINGERPRINT,
        }
        with_usage = usage is not None

        def event(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            obj = dict(base)
            obj["choices"] = [
                {
                    "index": 0,
                    "delta": delta,
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ]
            if with_usage:
                obj["usage"] = None
            return b"data: " + orjson.dumps(obj) + b"\n\n"

        events: list[bytes] = []
        if tool_name is not None:
            events.append(
                event(
                    {
                        "role": "assistant",
                        "content": None,
                        "refusal": None,
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": tool_name, "arguments": ""},
                            }
                        ],
                    }
                )
            )
            for frag in _split_args(TOOL_ARGUMENTS):
                events.append(event({"tool_calls": [{"index": 0, "function": {"arguments": frag}}]}))
        else:
            events.append(event({"role": "assistant", "content": "", "refusal": None}))
            for piece in _split_words(content or ""):
                events.append(event({"content": piece}))
        events.append(event({}, finish))
        if usage is not None:
            obj = dict(base)
            obj["choices"] = []
            obj["usage"] = usage
            events.append(b"data: " + orjson.dumps(obj) + b"\n\n")
        events.append(b"data: [DONE]\n\n")

        writer = conn.writer
        head = conn.head(200, _SSE, None, ((b"cache-control", b"no-cache"),))
        frame = conn.frame
        kind = fault.kind if fault is not None else None
        if kind not in ("stream_cut", "stall", "malformed_chunk"):
            writer.write(head + b"".join([frame(e) for e in events]) + conn.end())
            return conn.keep_alive

        k = max(0, min(fault.after_chunks, len(events) - 1))  # type: ignore[union-attr]
        writer.write(head + b"".join([frame(e) for e in events[:k]]))
        await writer.drain()
        if kind == "stream_cut":
            writer.close()  # flushes what was written, then FIN; no terminating chunk / [DONE]
            return False
        if kind == "stall":
            await asyncio.sleep(fault.delay)  # type: ignore[union-attr]
        else:  # malformed_chunk
            bad = fault.body if fault.body is not None else MALFORMED_JSON  # type: ignore[union-attr]
            writer.write(frame(b"data: " + bad + b"\n\n"))
            events = events[-1:]
            k = 0
        writer.write(b"".join([frame(e) for e in events[k:]]) + conn.end())
        return conn.keep_alive


def _wants_stream(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True


# --------------------------------------------------------------------------- CLI


async def _serve(args: argparse.Namespace) -> None:
    fake = FakeOpenAI(
        args.host,
        args.port,
        api_key=args.api_key,
        latency=args.latency,
        models=args.model,
    )
    await fake.start()
    print(f"listening on {fake.base_url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await fake.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m faregate.testing.fake_openai",
        description="Fake OpenAI Chat Completions server",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument(
        "--latency",
        type=float,
        default=0.0,
        help="seconds to sleep before every answer",
    )
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer <key>'")
    parser.add_argument("--model", action="append", default=[], help="extra model id for /v1/models")
    parser.add_argument("--no-uvloop", action="store_true", help="use the default asyncio event loop")
    args = parser.parse_args(argv)
    loop_factory = None
    if not args.no_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            loop_factory = uvloop.new_event_loop
    with (
        contextlib.suppress(KeyboardInterrupt),
        asyncio.Runner(loop_factory=loop_factory) as runner,
    ):
        runner.run(_serve(args))


if __name__ == "__main__":
    main(sys.argv[1:])
