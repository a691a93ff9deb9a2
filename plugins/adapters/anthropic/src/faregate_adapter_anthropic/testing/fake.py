"""A fake Anthropic Messages server on a real loopback TCP port.

Speaks Anthropic's documented wire format for ``POST /v1/messages`` (regular and
streaming) and ``GET /v1/models``, deterministically, with faults injectable per
request. It is a :class:`~faregate.testing.fake_server.FakeServer`, so streams can be cut
mid-way.

Behaviour:

* ``x-api-key`` must equal ``key`` (alias ``api_key``) when one is set (else 401
  ``authentication_error``); ``anthropic-version`` is required (else 400).
* Every ``POST /v1/messages`` body is validated against Anthropic's published request
  schema (``CreateMessageParams``, :mod:`.schema`; unknown fields are errors, as on the
  live API): a violation is answered 400 ``invalid_request_error`` with the schema
  error, and recorded in ``fake.violations`` so a test cannot pass unnoticed (the
  ``fake_anthropic`` fixture asserts it empty at teardown). ``validate_requests=False``
  turns this off.
* The reply is ``REPLY_PREFIX`` + the last user text, cut at a stop sequence
  (``stop_sequence``) or at ``max_tokens`` (``max_tokens``).
* With ``tools`` and a last user text containing "call tool" (or ``tool_choice`` any /
  tool), the answer is one ``tool_use`` block (``TOOL_INPUT``), stop reason ``tool_use``.
* With ``thinking: {type: enabled}`` a thinking block comes first, signed with
  :func:`signature_for`. Thinking blocks sent back are checked against their signature,
  and (as Anthropic does) a continued tool-use turn must start with one.
* ``tool_result`` blocks must answer ``tool_use`` ids of the assistant turn before.
* ``usage`` carries ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` from
  ``fake.cache_read_tokens`` / ``fake.cache_write_tokens``, the writes split by lifetime in
  ``cache_creation`` (``fake.cache_write_1h_tokens`` of them for one hour, the rest 5 minutes);
  thinking tokens are in ``output_tokens`` and ``output_tokens_details.thinking_tokens``. A stream's
  ``message_delta`` repeats the cumulative usage, as the live API does.

Faults (``fake.push_fault(Fault(kind, ...))`` or ``fake.fail_next(status, message)``, one
per request, FIFO): the shared kinds of :mod:`faregate.testing.fake_server` (``status``
answers Anthropic's error body, of ``error_type`` when given; ``stream_cut`` / ``stall``
act after ``after_events`` events of a stream), plus

``overloaded``    529 ``overloaded_error``
``stream_error``  stream: 200, ``after_events`` events, then ``event: error``
                  (``overloaded_error``), after ``delay`` seconds when given;
                  non-stream: as ``overloaded``
"""

from __future__ import annotations

import hashlib
import itertools
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from faregate.testing import fake_server
from faregate.testing.fake_server import FakeServer, Request, Response

__all__ = ["DEFAULT_MODELS", "FAULT_KINDS", "REPLY_PREFIX", "THINKING_PREFIX", "TOOL_INPUT", "FakeAnthropic",
           "Fault", "error_body", "signature_for"]

FAULT_KINDS = fake_server.FAULT_KINDS | {"overloaded", "stream_error"}
DEFAULT_MODELS = ("claude-sonnet-4-5", "claude-3-5-haiku-latest")
REPLY_PREFIX = "Hello from fake-anthropic! You said: "
THINKING_PREFIX = "Let me think about: "
TOOL_INPUT = {"city": "Paris"}
MALFORMED_JSON = b'{"id": "msg_x", "content": ['

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
class Fault(fake_server.Fault):
    """A fault of the fake Anthropic server: the shared kinds plus ``overloaded`` and
    ``stream_error``. ``after_events`` is Anthropic's name for ``after_chunks`` (one SSE
    event a frame); ``error_type`` overrides the error body's type."""

    after_chunks: int = 3
    after_events: int | None = None
    error_type: str | None = None

    kinds: ClassVar[frozenset[str]] = FAULT_KINDS

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.after_events is not None:
            self.after_chunks = self.after_events


def error_body(status: int, message: str | None = None, error_type: str | None = None) -> bytes:
    """Anthropic's error body: ``{"type": "error", "error": {"type", "message"}, "request_id"}``."""
    kind = error_type or ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")
    error = {"type": kind, "message": message or _MESSAGES.get(kind, kind)}
    body: bytes = orjson.dumps({"type": "error", "error": error, "request_id": "req_fake" + secrets.token_hex(8)})
    return body


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


def _wants_stream(body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True


class FakeAnthropic(FakeServer):
    """Fake Anthropic server. See the module docstring."""

    fault_type = Fault
    malformed_json = MALFORMED_JSON
    request_id_header = b"request-id"

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = None,
                 key: str | None = None, models: Iterable[str] = (), validate_requests: bool = True) -> None:
        super().__init__(host, port, key=key if key is not None else api_key, validate_requests=validate_requests)
        self.models = list(dict.fromkeys([*DEFAULT_MODELS, *models]))
        self.cache_read_tokens = 0
        self.cache_write_tokens = 0
        self.cache_write_1h_tokens = 0  # of cache_write_tokens: written for one hour
        self._ids = itertools.count(1)

    @property
    def api_key(self) -> str | None:
        return self.key

    # ---- errors and faults ----------------------------------------------------------------
    def error_body(self, status: int, message: str | None = None) -> bytes:
        return error_body(status, message)

    def fault_body(self, fault: fake_server.Fault) -> bytes:
        if fault.body is not None:
            return fault.body
        return error_body(fault.status, fault.message, getattr(fault, "error_type", None))

    def load_schema(self) -> None:
        from faregate_adapter_anthropic.testing.schema import SPEC  # needs faregate[testing]

        SPEC.load()

    def schema_problem(self, request: Request) -> str | None:
        if request.method != "POST" or request.path != "/v1/messages":
            return None
        from faregate_adapter_anthropic.testing.schema import request_errors  # needs faregate[testing]

        return request_errors(request.json)

    async def answer_fault(self, request: Request, response: Response) -> bool:
        fault = response.fault
        assert fault is not None
        self.check_request(request)
        if fault.kind == "overloaded" or (fault.kind == "stream_error" and not _wants_stream(request.json)):
            response.send(529, error_body(529))
            return True
        return await super().answer_fault(request, response)

    # ---- routes ---------------------------------------------------------------------------
    async def answer(self, request: Request, response: Response) -> None:
        if self.key is not None and request.headers.get("x-api-key") != self.key:
            return response.send(401, error_body(401))
        if not request.headers.get("anthropic-version"):
            return response.send(400, error_body(400, "anthropic-version: header is required"))
        if request.method == "GET" and request.path == "/v1/models":
            data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-02-19T00:00:00Z"}
                    for m in self.models]
            return response.send(200, orjson.dumps({"data": data, "first_id": self.models[0],
                                                    "last_id": self.models[-1], "has_more": False}))
        if request.method == "POST" and request.path == "/v1/messages":
            violation = self.check_request(request)
            try:  # the fake's own messages for the mistakes it names, then the schema's
                message = self._answer(request.json)
            except _BadInput as exc:
                return response.send(400, error_body(400, str(exc)))
            if violation is not None:
                return response.send(400, error_body(400, violation))
            if _wants_stream(request.json):
                events = self._events(message, response.fault)
                fault = response.fault
                if fault is not None and fault.kind == "stream_error" and fault.delay:
                    # the events first, the error later: the client has seen content by then
                    return await response.stream(events, pause=(len(events) - 1, fault.delay))
                return await response.stream(events)
            return await response.reply(200, orjson.dumps(message))
        response.send(404, error_body(404, f"Not found: {request.method} {request.path}"))

    # ---- Messages -------------------------------------------------------------------------
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
        if isinstance(thinking, dict) and thinking_on:
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
            content.append({"type": "tool_use", "id": f"toolu_{self.id_prefix}{next(self._ids):012d}", "name": tool,
                            "input": TOOL_INPUT, "caller": {"type": "direct"}})
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
            content.append({"type": "text", "text": text, "citations": None})
            output_tokens = _tokens(text)
        usage: dict[str, Any] = {
            "input_tokens": prompt_tokens, "cache_creation_input_tokens": self.cache_write_tokens,
            "cache_read_input_tokens": self.cache_read_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": self.cache_write_tokens - self.cache_write_1h_tokens,
                               "ephemeral_1h_input_tokens": self.cache_write_1h_tokens},
            "output_tokens": output_tokens + thinking_tokens,
            "output_tokens_details": {"thinking_tokens": thinking_tokens} if thinking_tokens else None,
            "server_tool_use": None, "service_tier": "standard", "inference_geo": None}
        return {"id": f"msg_{self.id_prefix}{next(self._ids):012d}", "type": "message", "role": "assistant",
                "model": model, "content": content, "stop_reason": stop_reason, "stop_sequence": stop_sequence,
                "stop_details": None, "container": None, "usage": usage}

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
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
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
                first = blocks[0].get("type") if blocks and isinstance(blocks[0], dict) else None
                if first not in ("thinking", "redacted_thinking"):
                    raise _BadInput(f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                                    "but found `tool_use`. When `thinking` is enabled, a final `assistant` message "
                                    "must start with a thinking block.")

    @staticmethod
    def _tool_choice(body: dict[str, Any], last: dict[str, Any]) -> str | None:
        tools = body.get("tools")
        if not isinstance(tools, list) or not tools:
            return None
        choice = body.get("tool_choice")
        if not isinstance(choice, dict):
            choice = {}
        kind = choice.get("type", "auto")
        if kind == "none":
            return None
        if kind == "tool":
            return str(choice.get("name"))
        if kind != "any" and not (last.get("role") == "user" and "call tool" in _text_of(last.get("content")).lower()):
            return None
        return str(tools[0].get("name") or "tool")

    @staticmethod
    def _events(message: dict[str, Any], fault: fake_server.Fault | None) -> list[bytes]:
        """The SSE events of ``message``; with a ``stream_error`` fault, the first
        ``after_events`` of them and an ``error`` event."""
        usage = message["usage"]
        start_usage = {**usage, "output_tokens": 1, "output_tokens_details": None}
        delta_usage = {k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                                             "output_tokens", "output_tokens_details", "server_tool_use")}
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
                                                           "content_block": {"type": "text", "text": "",
                                                                             "citations": None}}))
                deltas = [{"type": "text_delta", "text": p} for p in _split(block["text"])]
            events += [_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                       for d in deltas]
            events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(_sse("message_delta", {"type": "message_delta",
                                             "delta": {"stop_reason": message["stop_reason"],
                                                       "stop_sequence": message["stop_sequence"],
                                                       "stop_details": None, "container": None},
                                             "usage": delta_usage}))
        events.append(_sse("message_stop", {"type": "message_stop"}))
        if fault is None or fault.kind != "stream_error":
            return events
        k = max(0, min(fault.after_chunks, len(events) - 1))
        err = orjson.loads(error_body(529, fault.message, getattr(fault, "error_type", None)))
        return [*events[:k], _sse("error", {"type": "error", "error": err["error"]})]
