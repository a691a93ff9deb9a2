"""Canonical stream events → the Responses event sequence, for a converted stream:
``response.created``, ``response.in_progress``, then per output item
``response.output_item.added``, its content events (``response.content_part.added``,
``response.output_text.delta`` … ``.done``, ``response.content_part.done``; or
``response.reasoning_summary_part.added``, ``response.reasoning_summary_text.delta`` …; or
``response.function_call_arguments.delta`` … ``.done``) and ``response.output_item.done``,
and last ``response.completed`` (``response.incomplete`` when cut by the output limit or a
filter) carrying the whole Response with its usage. Every event has its
``sequence_number``; items are opened and closed one at a time, in order.

After the first byte, a failure is an ``error`` event, then ``response.failed`` when this
encoder began the response (a passed-through stream gets the ``error`` event only: its
response is the upstream's)."""

from __future__ import annotations

import logging
import time
from typing import Any

from faregate.api import (
    GatewayError,
    ReasoningDelta,
    RequestSummary,
    StopReason,
    StreamEncoder,
    StreamEvent,
    StreamStart,
    StreamStop,
    TextDelta,
    ToolCallDelta,
    Usage,
    json_dumps,
)
from faregate_adapter_openai.responses_api import render
from faregate_adapter_openai.responses_api.summary import ResponsesSummary

log = logging.getLogger("faregate.adapter.openai")


class _Item:
    """The output item being streamed."""

    __slots__ = ("call_id", "encrypted", "id", "key", "name", "output_index", "parts", "summary_open")

    def __init__(self, key: tuple[int, str], output_index: int, item_id: str) -> None:
        self.key = key
        self.output_index = output_index
        self.id = item_id
        self.parts: list[str] = []  # text, summary text or arguments, as they came
        self.call_id = ""
        self.name = ""
        self.encrypted: str | None = None
        self.summary_open = False

    @property
    def kind(self) -> str:
        return self.key[1]

    def added(self) -> dict[str, Any]:
        """The item as ``response.output_item.added`` announces it."""
        if self.kind == "message":
            return {"id": self.id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        if self.kind == "reasoning":
            return render.reasoning_item(self.id, "", None)
        return render.function_call_item(self.id, self.call_id, self.name, "", status="in_progress")

    def done(self, status: str) -> dict[str, Any]:
        text = "".join(self.parts)
        if self.kind == "message":
            return render.message_item(self.id, text, status)
        if self.kind == "reasoning":
            return render.reasoning_item(self.id, text, self.encrypted)
        return render.function_call_item(self.id, self.call_id, self.name, text, status)


class ResponsesStreamEncoder(StreamEncoder):
    """One converted stream in the Responses format (see the module docstring)."""

    def __init__(self, summary: RequestSummary, request_id: str) -> None:
        self.params: dict[str, Any] = summary.params if isinstance(summary, ResponsesSummary) else {}
        self.model = summary.model
        self.id = f"resp_{request_id}"
        self.created = int(time.time())
        self.seq = 0
        self.started = False
        self.finished = False
        self.items: list[dict[str, Any]] = []  # finished output items
        self.open: _Item | None = None
        self.closed: set[tuple[int, str]] = set()
        self.count = 0  # output items begun
        self.stop_reason: StopReason | None = None

    # ---- wire ---------------------------------------------------------------------------
    def _event(self, kind: str, payload: dict[str, Any]) -> bytes:
        payload = {"type": kind, **payload, "sequence_number": self.seq}
        self.seq += 1
        return b"event: " + kind.encode() + b"\ndata: " + json_dumps(payload) + b"\n\n"

    def _response(self, status: str, usage: Usage | None = None, *, error: dict[str, Any] | None = None,
                  incomplete: str | None = None) -> dict[str, Any]:
        return render.response_object(self.params, response_id=self.id, created_at=self.created, model=self.model,
                                      status=status, output=list(self.items), usage=usage, error=error,
                                      incomplete=incomplete)

    def _start(self) -> bytes:
        if self.started:
            return b""
        self.started = True
        response = self._response("in_progress")
        return (self._event("response.created", {"response": response})
                + self._event("response.in_progress", {"response": response}))

    # ---- items ----------------------------------------------------------------------------
    def _where(self, item: _Item) -> dict[str, Any]:
        return {"item_id": item.id, "output_index": item.output_index}

    def _close(self, status: str = "completed") -> bytes:
        item, self.open = self.open, None
        if item is None:
            return b""
        self.closed.add(item.key)
        text = "".join(item.parts)
        out = b""
        if item.kind == "message":
            out += self._event("response.output_text.done", {**self._where(item), "content_index": 0, "text": text,
                                                             "logprobs": []})
            out += self._event("response.content_part.done", {**self._where(item), "content_index": 0,
                                                              "part": render.text_part(text)})
        elif item.kind == "reasoning" and item.summary_open:
            summary = {**self._where(item), "summary_index": 0}
            out += self._event("response.reasoning_summary_text.done", {**summary, "text": text})
            out += self._event("response.reasoning_summary_part.done",
                               {**summary, "part": {"type": "summary_text", "text": text}})
        elif item.kind == "function_call":
            out += self._event("response.function_call_arguments.done", {**self._where(item), "name": item.name,
                                                                         "arguments": text})
        done = item.done(status)
        self.items.append(done)
        return out + self._event("response.output_item.done", {"output_index": item.output_index, "item": done})

    def _begin(self, key: tuple[int, str], prefix: str, call_id: str = "", name: str = "") -> tuple[_Item, bytes]:
        """Make ``key`` the open item; the bytes that got it there."""
        if self.open is not None and self.open.key == key:
            return self.open, b""
        out = self._start() + self._close()
        item = self.open = _Item(key, self.count, render.item_id(prefix, self.id, self.count))
        self.count += 1
        item.call_id, item.name = call_id, name
        out += self._event("response.output_item.added", {"output_index": item.output_index, "item": item.added()})
        if item.kind == "message":
            out += self._event("response.content_part.added", {**self._where(item), "content_index": 0,
                                                               "part": render.text_part("")})
        return item, out

    def encode(self, event: StreamEvent) -> bytes:
        if isinstance(event, StreamStart):
            return self._start()
        if isinstance(event, TextDelta):
            if not event.text:
                return b""
            item, out = self._begin((event.index, "message"), "msg")
            item.parts.append(event.text)
            return out + self._event("response.output_text.delta", {**self._where(item), "content_index": 0,
                                                                    "delta": event.text, "logprobs": []})
        if isinstance(event, ReasoningDelta):
            return self._reasoning(event)
        if isinstance(event, ToolCallDelta):
            key = (event.index, "function_call")
            if key in self.closed:
                # a fragment of a call already closed (an upstream interleaving parallel calls):
                # the sequence cannot reopen an item
                log.warning("dropped a late tool-call fragment for block %s", event.index)
                return b""
            call_id = event.id or render.item_id("call", self.id, self.count)
            item, out = self._begin(key, "fc", call_id, event.name or "")
            if event.arguments:
                item.parts.append(event.arguments)
                out += self._event("response.function_call_arguments.delta", {**self._where(item),
                                                                              "delta": event.arguments})
            return out
        if isinstance(event, StreamStop):
            self.stop_reason = event.stop_reason
        return b""  # usage and errors reach finish() / error() through the relay

    def _reasoning(self, event: ReasoningDelta) -> bytes:
        if not (event.text or event.signature or event.redacted):
            return b""
        item, out = self._begin((event.index, "reasoning"), "rs")
        if event.redacted or event.signature:
            item.encrypted = event.redacted or event.signature
        if event.text:
            summary = {**self._where(item), "summary_index": 0}
            if not item.summary_open:
                item.summary_open = True
                out += self._event("response.reasoning_summary_part.added",
                                   {**summary, "part": {"type": "summary_text", "text": ""}})
            item.parts.append(event.text)
            out += self._event("response.reasoning_summary_text.delta", {**summary, "delta": event.text})
        return out

    # ---- the end --------------------------------------------------------------------------
    def finish(self, usage: Usage | None) -> bytes:
        if self.finished:
            return b""
        self.finished = True
        status, incomplete = render.status_of(self.stop_reason)
        out = self._start() + self._close("incomplete" if status == "incomplete" else "completed")
        if status == "failed":
            response = self._response("failed", usage, error={"code": "server_error",
                                                              "message": "the model stopped with an error"})
            return out + self._event("response.failed", {"response": response})
        response = self._response(status, usage, incomplete=incomplete)
        return out + self._event(f"response.{status}", {"response": response})

    def error(self, err: GatewayError) -> bytes:
        out = self._event("error", {"code": err.code, "message": err.message, "param": err.param})
        if self.started and not self.finished:
            self.finished = True
            code = "rate_limit_exceeded" if err.status == 429 else "server_error"
            response = self._response("failed", error={"code": code, "message": err.message})
            out += self._event("response.failed", {"response": response})
        return out
