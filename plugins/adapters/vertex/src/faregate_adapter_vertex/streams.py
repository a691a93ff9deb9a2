"""Vertex AI streams are the publishers' own Server-Sent Events: Anthropic's named events
for a Claude model (``message_start`` …), Gemini's ``GenerateContentResponse`` chunks for a
Gemini model. :class:`VertexStreamParser` tells them apart by the first event and reads the
rest with the matching plugin's parser."""

from __future__ import annotations

from faregate.api import StreamEvent, StreamParser, json_loads
from faregate_adapter_anthropic.streams import AnthropicStreamParser
from faregate_adapter_gemini.streams import GeminiStreamParser

ANTHROPIC_EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta", "content_block_stop",
                              "message_delta", "message_stop", "ping", "error"})


def _anthropic(event: str | None, data: bytes) -> bool:
    if event in ANTHROPIC_EVENTS:
        return True
    if not data.strip():
        return False
    obj = json_loads(data)
    return isinstance(obj, dict) and obj.get("type") in ANTHROPIC_EVENTS


class VertexStreamParser(StreamParser):
    def __init__(self) -> None:
        self.done = False
        self.inner: StreamParser | None = None

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        if self.inner is None:
            self.inner = AnthropicStreamParser() if _anthropic(event, data) else GeminiStreamParser()
        events = self.inner.feed(event, data)
        self.done = self.inner.done
        return events
