"""A fake Anthropic Messages server on a real loopback TCP port.

Speaks Anthropic's documented wire format for ``POST /v1/messages`` (regular and
streaming) and ``GET /v1/models``, deterministically, with faults injectable per
request. Like :mod:`faregate.testing.fake_openai` it is a raw ``asyncio`` HTTP/1.1
server, so streams can be cut mid-way.

Behaviour:

* ``x-api-key`` must equal ``api_key`` when one is set (else 401
  ``authentication_error``); ``anthropic-version`` is required (else 400).
* The reply is ``REPLY_PREFIX`` + the last user text, cut at a stop sequence
  (``stop_sequence``) or at ``max_tokens`` (``max_tokens``).
* With ``tools`` and a last user text containing "call tool" (or ``tool_choice`` any /
  tool), the answer is one ``tool_use`` block (``TOOL_INPUT``), stop reason ``tool_use``.
* With ``thinking: {type: enabled}`` a thinking block comes first, signed with
  :func:`signature_for`. Thinking blocks sent back are checked against their signature,
  and (as Anthropic does) a continued tool-use turn must start with one.
* ``tool_result`` blocks must answer ``tool_use`` ids of the assistant turn before.
* ``usage`` carries ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` from
  ``fake.cache_read_tokens`` / ``fake.cache_write_tokens``; thinking tokens are in
  ``output_tokens`` and ``output_tokens_details.thinking_tokens``. A stream's
  ``message_delta`` repeats the cumulative usage, as the live API does.

Faults (``fake.push_fault(Fault(kind, ...))``, one per request, FIFO):

``status``        reply ``status`` with Anthropic's error body (+ ``Retry-After``)
``overloaded``    529 ``overloaded_error``
``stream_error``  stream: 200, ``after_events`` events, then ``event: error``
                  (``overloaded_error``); non-stream: as ``overloaded``
``stream_cut``    stream: ``after_events`` events then close; non-stream: half the body
``malformed_json`` 200 with a truncated JSON body
``reset``         drop the connection before answering
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Self

import orjson

__all__ = ["FAULT_KINDS", "FakeAnthropic", "Fault", "error_body", "signature_for"]

FAULT_KINDS = frozenset({"status", "overloaded", "stream_error", "stream_cut", "malformed_json", "reset"})
DEFAULT_MODELS = ("claude-sonnet-4-5", "claude-3-5-haiku-latest")
REPLY_PREFIX = "Hello from fake-anthropic! You said: "
THINKING_PREFIX = "Let me think about: "
TOOL_INPUT = {"city": "Paris"}
MALFORMED_JSON = b'{"id": "msg_x", "content": ['
MAX_BODY = 64 * 1024 * 1024

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_MESSAGES = {
    "overloaded_error": "Overloaded",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "api_error": "Internal server error",
    "authentication_error": "invalid x-api-key",
}


@dataclass
class Fault:
    kind: str
    status: int = 500
    retry_after: str | None = None
    after_events: int = 3
    error_type: str | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {sorted(FAULT_KINDS)}")


def error_body(status: int, message: str | None = None, error_type: str | None = None) -> bytes:
    kind = error_type or ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")
    return orjson.dumps({"type": "error", "error": {"type": kind, "message": message or _MESSAGES.get(kind, kind)},
                         "request_id": "req_fake" + secrets.token_hex(8)})


def signature_for(thinking: str) -> str:
    """The fake's deterministic thinking signature (Anthropic's is opaque)."""
    return "sig_" + hashlib.sha256(thinking.encode()).hexdigest()[:40]


class _BadInput(Exception):
    pass


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content
                       if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def _tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _sse(event: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def _split(text: str, parts: int = 4) -> list[str]:
    step = max(1, -(-len(text) // parts))
    return [text[i:i + step] for i in range(0, len(text), step)] or [""]


class _Request:
    __slots__ = ("body", "headers", "keep_alive", "method", "path")

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.keep_alive = "close" not in headers.get("connection", "").lower()


class FakeAnthropic:
    """Fake Anthropic server. See the module docstring."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = None,
                 models: Iterable[str] = ()) -> None:
        self.host = host
        self.port = port
        self.api_key = api_key
        self.models = list(dict.fromkeys([*DEFAULT_MODELS, *models]))
        self.requests: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.cache_read_tokens = 0
        self.cache_write_tokens = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._ids = itertools.count(1)
        self._prefix = secrets.token_hex(6)

    # ---- lifecycle ------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(self._handle, self.host, self.port, limit=1 << 20)
            self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def push_fault(self, fault: Fault) -> None:
        self.faults.append(fault)

    # ---- HTTP -------------------------------------------------------------------------
    async def _read(self, reader: asyncio.StreamReader) -> _Request | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head[:-4].decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass
                    break
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
            body = b"".join(parts)
        else:
            length = int(headers.get("content-length", "0") or 0)
            if length > MAX_BODY:
                raise ValueError("body too large")
            body = await reader.readexactly(length) if length else b""
        return _Request(method, target.split("?", 1)[0], headers, body)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                req = await self._read(reader)
                if req is None or not await self._respond(writer, req):
                    break
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError, ValueError):
            pass
        except asyncio.CancelledError:
            writer.transport.abort()
        finally:
            self._writers.discard(writer)
            if not writer.transport.is_closing():
                writer.close()

    @staticmethod
    def _head(status: int, content_type: bytes, length: int | None, keep_alive: bool,
              extra: Iterable[tuple[bytes, bytes]] = ()) -> bytes:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Overloaded" if status == 529 else "Unknown"
        parts = [f"HTTP/1.1 {status} {phrase}\r\n".encode(), b"content-type: " + content_type + b"\r\n",
                 b"request-id: req_fake" + secrets.token_hex(6).encode() + b"\r\n"]
        parts += [k + b": " + v + b"\r\n" for k, v in extra]
        parts.append(b"content-length: %d\r\n" % length if length is not None else b"transfer-encoding: chunked\r\n")
        parts.append(b"connection: keep-alive\r\n\r\n" if keep_alive else b"connection: close\r\n\r\n")
        return b"".join(parts)

    def _send(self, writer: asyncio.StreamWriter, req: _Request, status: int, body: bytes,
              extra: Iterable[tuple[bytes, bytes]] = ()) -> bool:
        writer.write(self._head(status, b"application/json", len(body), req.keep_alive, extra) + body)
        return req.keep_alive

    def _record(self, req: _Request) -> Any:
        try:
            parsed = orjson.loads(req.body) if req.body else None
        except orjson.JSONDecodeError:
            parsed = None
        self.requests.append({"method": req.method, "path": req.path, "headers": req.headers, "json": parsed,
                              "raw": req.body})
        del self.requests[:-1000]
        return parsed

    async def _respond(self, writer: asyncio.StreamWriter, req: _Request) -> bool:
        body = self._record(req)
        fault = self.faults.pop(0) if self.faults else None
        if fault is not None:
            if fault.kind == "reset":
                writer.transport.abort()
                return False
            if fault.kind == "status":
                extra = [(b"retry-after", fault.retry_after.encode())] if fault.retry_after else []
                return self._send(writer, req, fault.status,
                                  error_body(fault.status, fault.message, fault.error_type), extra)
            if fault.kind == "overloaded" or (fault.kind == "stream_error" and not _wants_stream(body)):
                return self._send(writer, req, 529, error_body(529))
            if fault.kind == "malformed_json":
                return self._send(writer, req, 200, MALFORMED_JSON)
        if self.api_key is not None and req.headers.get("x-api-key") != self.api_key:
            return self._send(writer, req, 401, error_body(401))
        if not req.headers.get("anthropic-version"):
            return self._send(writer, req, 400, error_body(400, "anthropic-version: header is required"))
        if req.method == "GET" and req.path == "/v1/models":
            data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-02-19T00:00:00Z"}
                    for m in self.models]
            return self._send(writer, req, 200, orjson.dumps({"data": data, "first_id": self.models[0],
                                                              "last_id": self.models[-1], "has_more": False}))
        if req.method == "POST" and req.path == "/v1/messages":
            try:
                message = self._answer(body)
            except _BadInput as exc:
                return self._send(writer, req, 400, error_body(400, str(exc)))
            if _wants_stream(body):
                return await self._stream(writer, req, message, fault)
            payload = orjson.dumps(message)
            if fault is not None and fault.kind == "stream_cut":
                writer.write(self._head(200, b"application/json", len(payload), False) + payload[:len(payload) // 2])
                await writer.drain()
                writer.close()
                return False
            return self._send(writer, req, 200, payload)
        return self._send(writer, req, 404, error_body(404, f"Not found: {req.method} {req.path}"))

    # ---- Messages -----------------------------------------------------------------------
    def _answer(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _BadInput("request body must be a JSON object")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise _BadInput("model: Field required")
        max_tokens = body.get("max_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise _BadInput("max_tokens: Field required")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _BadInput("messages: at least one message is required")
        thinking = body.get("thinking")
        thinking_on = isinstance(thinking, dict) and thinking.get("type") == "enabled"
        if thinking_on:
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024 or budget >= max_tokens:
                raise _BadInput("thinking.budget_tokens: must be ≥ 1024 and less than max_tokens")
            if body.get("temperature") not in (None, 1, 1.0) or "top_k" in body:
                raise _BadInput("temperature may only be set to 1 when thinking is enabled")
        self._check_messages(messages, thinking_on)
        prompt_tokens = _tokens(_text_of(body.get("system"))) + sum(
            3 + _tokens(_text_of(m.get("content")) or orjson.dumps(m.get("content")).decode()) for m in messages)
        last = messages[-1]
        last_text = _text_of(last.get("content")) if last.get("role") == "user" else ""
        if not last_text:
            last_text = next((_text_of(m.get("content")) for m in reversed(messages)
                              if m.get("role") == "user" and _text_of(m.get("content"))), "")
        content: list[dict[str, Any]] = []
        output_tokens = 0
        thinking_tokens = 0
        if thinking_on:
            thought = THINKING_PREFIX + last_text[:100]
            content.append({"type": "thinking", "thinking": thought, "signature": signature_for(thought)})
            thinking_tokens = _tokens(thought)
        tool = self._tool_choice(body, last)
        stop_sequence = None
        if tool is not None:
            content.append({"type": "tool_use", "id": f"toolu_{self._prefix}{next(self._ids):012d}", "name": tool,
                            "input": TOOL_INPUT})
            output_tokens = _tokens(tool + orjson.dumps(TOOL_INPUT).decode())
            stop_reason = "tool_use"
        else:
            text = REPLY_PREFIX + last_text[:200]
            stop_reason = "end_turn"
            for seq in body.get("stop_sequences") or []:
                if isinstance(seq, str) and seq and seq in text:
                    text = text[:text.index(seq)]
                    stop_reason, stop_sequence = "stop_sequence", seq
                    break
            room = max_tokens - thinking_tokens
            if _tokens(text) > room:
                text = text[:max(1, room) * 4]
                stop_reason = "max_tokens"
            content.append({"type": "text", "text": text})
            output_tokens = _tokens(text)
        usage: dict[str, Any] = {"input_tokens": prompt_tokens, "cache_creation_input_tokens": self.cache_write_tokens,
                                 "cache_read_input_tokens": self.cache_read_tokens,
                                 "output_tokens": output_tokens + thinking_tokens}
        if thinking_tokens:
            usage["output_tokens_details"] = {"thinking_tokens": thinking_tokens}
        return {"id": f"msg_{self._prefix}{next(self._ids):012d}", "type": "message", "role": "assistant",
                "model": model, "content": content, "stop_reason": stop_reason, "stop_sequence": stop_sequence,
                "usage": usage}

    @staticmethod
    def _check_messages(messages: list[Any], thinking_on: bool) -> None:
        previous_tool_ids: set[str] = set()
        for i, msg in enumerate(messages):
            if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
                raise _BadInput(f"messages.{i}.role: Input should be 'user' or 'assistant'")
            content = msg.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            if not isinstance(blocks, list):
                raise _BadInput(f"messages.{i}.content: Input should be a valid list")
            tool_ids: set[str] = set()
            for j, block in enumerate(blocks):
                kind = block.get("type") if isinstance(block, dict) else None
                if kind == "text" and not block.get("text"):
                    raise _BadInput(f"messages.{i}.content.{j}: text content blocks must be non-empty")
                if kind == "thinking" and block.get("signature") != signature_for(str(block.get("thinking", ""))):
                    raise _BadInput(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
                if kind == "tool_use":
                    if not isinstance(block.get("input"), dict):
                        raise _BadInput(f"messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary")
                    tool_ids.add(str(block.get("id")))
                if kind == "tool_result" and block.get("tool_use_id") not in previous_tool_ids:
                    raise _BadInput(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                                    "blocks. Each `tool_result` block must have a corresponding `tool_use` block "
                                    "in the previous message.")
            if msg["role"] == "assistant":
                previous_tool_ids = tool_ids
            if thinking_on and msg["role"] == "assistant" and tool_ids and i >= len(messages) - 2:
                first = blocks[0].get("type") if blocks else None
                if first not in ("thinking", "redacted_thinking"):
                    raise _BadInput(f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                                    "but found `tool_use`. When `thinking` is enabled, a final `assistant` message "
                                    "must start with a thinking block.")

    @staticmethod
    def _tool_choice(body: dict[str, Any], last: dict[str, Any]) -> str | None:
        tools = body.get("tools")
        if not isinstance(tools, list) or not tools:
            return None
        choice = body.get("tool_choice") if isinstance(body.get("tool_choice"), dict) else {}
        kind = choice.get("type", "auto")
        if kind == "none":
            return None
        if kind == "tool":
            return str(choice.get("name"))
        if kind != "any" and not (last.get("role") == "user" and "call tool" in _text_of(last.get("content")).lower()):
            return None
        return str(tools[0].get("name") or "tool")

    async def _stream(self, writer: asyncio.StreamWriter, req: _Request, message: dict[str, Any],
                      fault: Fault | None) -> bool:
        usage = message["usage"]
        start_usage = {**{k: v for k, v in usage.items() if k != "output_tokens_details"}, "output_tokens": 1}
        events = [_sse("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}}),
            _sse("ping", {"type": "ping"})]
        for index, block in enumerate(message["content"]):
            kind = block["type"]
            if kind == "thinking":
                events.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                           "content_block": {"type": "thinking", "thinking": "",
                                                                             "signature": ""}}))
                deltas = [{"type": "thinking_delta", "thinking": p} for p in _split(block["thinking"])]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            elif kind == "tool_use":
                events.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                           "content_block": {**block, "input": {}}}))
                deltas = [{"type": "input_json_delta", "partial_json": p}
                          for p in ["", *_split(orjson.dumps(block["input"]).decode())]]
            else:
                events.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                           "content_block": {"type": "text", "text": ""}}))
                deltas = [{"type": "text_delta", "text": p} for p in _split(block["text"])]
            events += [_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                       for d in deltas]
            events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(_sse("message_delta", {"type": "message_delta",
                                             "delta": {"stop_reason": message["stop_reason"],
                                                       "stop_sequence": message["stop_sequence"]},
                                             "usage": usage}))
        events.append(_sse("message_stop", {"type": "message_stop"}))

        def frame(data: bytes) -> bytes:
            return b"%x\r\n%b\r\n" % (len(data), data)

        head = self._head(200, b"text/event-stream; charset=utf-8", None, req.keep_alive,
                          [(b"cache-control", b"no-cache")])
        kind = fault.kind if fault is not None else None
        if kind not in ("stream_error", "stream_cut"):
            writer.write(head + b"".join(frame(e) for e in events) + b"0\r\n\r\n")
            return req.keep_alive
        assert fault is not None
        k = max(0, min(fault.after_events, len(events) - 1))
        writer.write(head + b"".join(frame(e) for e in events[:k]))
        if kind == "stream_error":
            err = orjson.loads(error_body(529, fault.message, fault.error_type))
            writer.write(frame(_sse("error", {"type": "error", "error": err["error"]})) + b"0\r\n\r\n")
            return req.keep_alive
        await writer.drain()
        writer.close()  # cut: no terminating chunk, no message_stop
        return False


def _wants_stream(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True
