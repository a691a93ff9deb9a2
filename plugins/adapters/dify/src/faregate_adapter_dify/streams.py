"""Dify's streaming answer (``response_mode: streaming``: SSE ``data:`` lines, each a JSON
object whose ``event`` names it) in canonical stream events. Stateful; no I/O.

``message`` / ``agent_message`` carry answer text; ``message_end`` the usage
(``metadata.usage``) and the end; ``error`` a failure mid-stream. Workflow and node
progress, agent thoughts, files, TTS audio, ``message_replace`` (a moderation verdict
on text already sent) and ``ping`` have no canonical form. Text inside Dify's
"Thinking..." block (see :mod:`.responses`) is reasoning."""

from __future__ import annotations

from faregate.api import (
    ReasoningDelta,
    StreamError,
    StreamEvent,
    StreamParser,
    StreamStart,
    StreamStop,
    TextDelta,
    UsageEvent,
    json_loads,
)
from faregate_adapter_dify.responses import THINKING_CLOSE, THINKING_OPEN, parse_usage

TEXT_EVENTS = frozenset({"message", "agent_message"})


class DifyStreamParser(StreamParser):
    def __init__(self) -> None:
        self.done = False
        self.started = False
        self.thinking = False  # inside the "Thinking..." block
        self.thought = False  # a thinking block came first: the text is the second block
        self.seen_text = False
        self.strip = False  # the whitespace after a thinking block is not the text's

    def _answer(self, answer: str) -> list[StreamEvent]:
        if not self.seen_text and not self.thought:
            opening = THINKING_OPEN.match(answer)
            if opening is not None:
                self.thinking = self.thought = True
                answer = answer[opening.end():]
        out: list[StreamEvent] = []
        if self.thinking:
            thought, closed, answer = answer.partition(THINKING_CLOSE)
            if thought:
                out.append(ReasoningDelta(index=0, text=thought))
            if not closed:
                return out
            self.thinking = False
            self.strip = True
        if self.strip:
            answer = answer.lstrip()
            self.strip = not answer
        if answer:
            self.seen_text = True
            out.append(TextDelta(index=1 if self.thought else 0, text=answer))
        return out

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        if not data.strip():
            return []  # Dify's keep-alive: ``event: ping`` with no data
        obj = json_loads(data)
        if not isinstance(obj, dict):
            return []
        kind = obj.get("event") or event
        out: list[StreamEvent] = []
        if not self.started and kind in (*TEXT_EVENTS, "message_end"):
            self.started = True
            out.append(StreamStart(id=str(obj.get("conversation_id") or obj.get("message_id") or ""), model=""))
        if kind in TEXT_EVENTS:
            answer = obj.get("answer")
            if isinstance(answer, str):
                out += self._answer(answer)
            return out
        if kind == "message_end":
            self.done = True
            out.append(StreamStop(stop_reason="stop"))
            usage = parse_usage(obj.get("metadata"))
            if usage is not None:
                out.append(UsageEvent(usage))
            return out
        if kind == "error":
            self.done = True
            code = obj.get("code")
            return [StreamError(message=str(obj.get("message") or "upstream error"), type="upstream_error",
                                code=str(code) if isinstance(code, str) else "dify_error")]
        return out
