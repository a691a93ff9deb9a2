"""OpenAI streams: :class:`OpenAIStreamParser` reads an upstream's ``chat.completion.chunk``
events into canonical stream events; :class:`OpenAIStreamEncoder` writes canonical events
as OpenAI chunks for a client."""

from __future__ import annotations

import time
from typing import Any

from faregate.api import (
    GatewayError,
    ReasoningDelta,
    StreamEncoder,
    StreamError,
    StreamEvent,
    StreamParser,
    StreamStart,
    StreamStop,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageEvent,
    json_dumps,
    json_loads,
)
from faregate_adapter_openai import errors
from faregate_adapter_openai.responses import FINISH_TO_STOP, parse_usage, render_usage


class OpenAIStreamParser(StreamParser):
    """OpenAI ``chat.completion.chunk`` events → canonical stream events."""

    def __init__(self) -> None:
        self.done = False
        self.started = False
        self._blocks: dict[str, int] = {}  # "text" / "reasoning" / f"tool:{i}" -> block index

    def _block(self, key: str) -> int:
        index = self._blocks.get(key)
        if index is None:
            index = self._blocks[key] = len(self._blocks)
        return index

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        if data == b"[DONE]":
            self.done = True
            return []
        chunk = json_loads(data)
        out: list[StreamEvent] = []
        if not isinstance(chunk, dict):
            return out
        if "error" in chunk and isinstance(chunk["error"], dict):
            err = chunk["error"]
            return [StreamError(message=str(err.get("message", "upstream error")), type=str(err.get("type") or
                                "upstream_error"), code=err.get("code"))]
        if not self.started:
            self.started = True
            out.append(StreamStart(id=str(chunk.get("id", "")), model=str(chunk.get("model", ""))))
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                out.append(ReasoningDelta(index=self._block("reasoning"), text=reasoning))
            for detail in delta.get("reasoning_details") or []:
                if not isinstance(detail, dict):
                    continue
                if detail.get("type") == "reasoning.encrypted" and isinstance(detail.get("data"), str):
                    out.append(ReasoningDelta(index=self._block(f"redacted:{len(self._blocks)}"),
                                              redacted=detail["data"]))
                elif isinstance(detail.get("signature"), str) and detail["signature"]:
                    out.append(ReasoningDelta(index=self._block("reasoning"), signature=detail["signature"]))
            text = delta.get("content")
            if isinstance(text, str) and text:
                out.append(TextDelta(index=self._block("text"), text=text))
            for call in delta.get("tool_calls") or []:
                tool_index = int(call.get("index", 0))
                fn = call.get("function") or {}
                out.append(ToolCallDelta(index=self._block(f"tool:{tool_index}"), tool_index=tool_index,
                                         id=call.get("id"), name=fn.get("name"),
                                         arguments=fn.get("arguments") or ""))
            finish = choice.get("finish_reason")
            if finish:
                out.append(StreamStop(stop_reason=FINISH_TO_STOP.get(finish, "stop")))
        usage = parse_usage(chunk.get("usage"))
        if usage is not None:
            out.append(UsageEvent(usage))
        return out


class OpenAIStreamEncoder(StreamEncoder):
    """Canonical stream events → OpenAI chunks (``data: …`` lines, ``[DONE]``)."""

    def __init__(self, model: str, request_id: str, include_usage: bool) -> None:
        self.model = model
        self.id = f"chatcmpl-{request_id}"
        self.created = int(time.time())
        self.include_usage = include_usage
        self.sent_role = False
        self.stop_reason: str | None = None
        self._tool_ids: dict[int, str] = {}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        body: dict[str, Any] = {
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if self.include_usage:
            body["usage"] = None
        return b"data: " + json_dumps(body) + b"\n\n"

    def _role(self, delta: dict[str, Any]) -> dict[str, Any]:
        if not self.sent_role:
            self.sent_role = True
            return {"role": "assistant", **delta}
        return delta

    def encode(self, event: StreamEvent) -> bytes:
        if isinstance(event, StreamStart):
            self.sent_role = True
            return self._chunk({"role": "assistant", "content": ""})
        if isinstance(event, TextDelta):
            return self._chunk(self._role({"content": event.text}))
        if isinstance(event, ReasoningDelta):
            if event.redacted:
                detail = {"type": "reasoning.encrypted", "data": event.redacted, "index": event.index}
                return self._chunk(self._role({"reasoning_details": [detail]}))
            if event.signature:  # the text came in earlier deltas; the client joins them
                detail = {"type": "reasoning.text", "text": event.text, "signature": event.signature, "index": 0}
                delta: dict[str, Any] = {"reasoning_details": [detail]}
                if event.text:
                    delta["reasoning_content"] = event.text
                return self._chunk(self._role(delta))
            if not event.text:
                return b""
            return self._chunk(self._role({"reasoning_content": event.text}))
        if isinstance(event, ToolCallDelta):
            call: dict[str, Any] = {"index": event.tool_index}
            if event.id or event.name:
                call.update({"id": event.id or f"call_{event.tool_index}", "type": "function",
                             "function": {"name": event.name or "", "arguments": event.arguments}})
            else:
                call["function"] = {"arguments": event.arguments}
            return self._chunk(self._role({"tool_calls": [call]}))
        if isinstance(event, StreamStop):
            reason = event.stop_reason if event.stop_reason not in (None, "error") else "stop"
            self.stop_reason = reason
            return self._chunk({}, finish=reason)
        return b""

    def error(self, err: GatewayError) -> bytes:
        return errors.error_event(err)

    def finish(self, usage: Usage | None) -> bytes:
        out = b""
        if self.stop_reason is None:
            out += self._chunk({}, finish="stop")
        if self.include_usage and usage is not None:
            body = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                    "choices": [], "usage": render_usage(usage)}
            out += b"data: " + json_dumps(body) + b"\n\n"
        return out + b"data: [DONE]\n\n"
