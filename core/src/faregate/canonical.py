"""The canonical model: one shape that OpenAI Chat, OpenAI Responses, Anthropic Messages
and Gemini requests, responses and stream events all map onto.

Adapters convert vendor JSON to and from these types only when the client's format
differs from the channel's; same-format requests never pass through here.
Fields a vendor has and the canonical model lacks travel in ``extra`` so a round trip
through a same-family channel keeps them. See docs/architecture.md for the mappings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from faregate.errors import ErrorKind

Role = Literal["system", "developer", "user", "assistant", "tool"]
StopReason = Literal["stop", "length", "tool_calls", "content_filter", "error"]


@dataclass(slots=True)
class TextPart:
    text: str
    type: Literal["text"] = "text"
    cache_control: dict[str, Any] | None = None


@dataclass(slots=True)
class ImagePart:
    """An image given either by URL or inline base64 data (``data`` + ``media_type``)."""

    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    detail: str | None = None
    type: Literal["image"] = "image"


@dataclass(slots=True)
class ReasoningPart:
    """Model reasoning ("thinking"). ``signature`` is Anthropic's opaque check value;
    ``redacted`` holds encrypted reasoning a vendor returns instead of text."""

    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    type: Literal["reasoning"] = "reasoning"


@dataclass(slots=True)
class ToolCallPart:
    id: str
    name: str
    arguments: str  # JSON text, as OpenAI carries it; Anthropic's dict input is dumped
    type: Literal["tool_call"] = "tool_call"


@dataclass(slots=True)
class ToolResultPart:
    tool_call_id: str
    content: list[TextPart | ImagePart]
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


ContentPart = TextPart | ImagePart | ReasoningPart | ToolCallPart | ToolResultPart


@dataclass(slots=True)
class Message:
    role: Role
    content: list[ContentPart]
    name: str | None = None

    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


@dataclass(slots=True)
class Tool:
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None  # JSON schema
    strict: bool | None = None


@dataclass(slots=True)
class ToolChoice:
    """``mode``: auto | none | required | tool (then ``name`` names the tool)."""

    mode: Literal["auto", "none", "required", "tool"] = "auto"
    name: str | None = None
    parallel: bool | None = None


@dataclass(slots=True)
class Reasoning:
    """What the client asked of the model's reasoning: an effort level (OpenAI) or a
    token budget (Anthropic, Gemini); ``enabled`` False turns it off."""

    enabled: bool = True
    effort: str | None = None
    budget_tokens: int | None = None


@dataclass(slots=True)
class ChatRequest:
    model: str
    messages: list[Message]
    stream: bool = False
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: list[str] = field(default_factory=list)
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    n: int | None = None
    tools: list[Tool] = field(default_factory=list)
    tool_choice: ToolChoice | None = None
    reasoning: Reasoning | None = None
    response_format: dict[str, Any] | None = None
    user: str | None = None
    include_usage: bool = False  # the client asked to see usage in the stream
    extra: dict[str, Any] = field(default_factory=dict)  # vendor fields with no canonical home


@dataclass(slots=True)
class Usage:
    """Token counts in one convention: ``input_tokens`` includes cached reads and cache
    writes (OpenAI semantics); Anthropic's separate counts are added in by its adapter."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: the part of ``cache_write_tokens`` cached for one hour (Anthropic's ephemeral_1h), priced higher
    cache_write_1h_tokens: int = 0
    reasoning_tokens: int = 0
    image_tokens: int = 0
    audio_tokens: int = 0  # audio input (part of ``input_tokens``)
    output_audio_tokens: int = 0  # audio output (part of ``output_tokens``)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def merge(self, other: Usage) -> None:
        """Take every count ``other`` reports (vendors send usage in pieces, e.g.
        Anthropic's message_start then message_delta); a later non-zero wins."""
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "cache_write_1h_tokens",
            "reasoning_tokens",
            "image_tokens",
            "audio_tokens",
            "output_audio_tokens",
        ):
            value = getattr(other, name)
            if value:
                setattr(self, name, value)


@dataclass(slots=True)
class ChatResponse:
    id: str
    model: str
    message: Message
    stop_reason: StopReason | None = "stop"
    stop_sequence: str | None = None
    usage: Usage | None = None
    created: int = 0


# ---- stream events -------------------------------------------------------------------
# A provider's stream parser turns upstream bytes into these; an inbound format's
# encoder turns them into the client's wire format. ``index`` numbers the content blocks
# of the one assistant message in order of first appearance.


@dataclass(slots=True)
class StreamStart:
    id: str
    model: str
    kind: Literal["start"] = "start"


@dataclass(slots=True)
class TextDelta:
    index: int
    text: str
    kind: Literal["text"] = "text"


@dataclass(slots=True)
class ReasoningDelta:
    """Reasoning text as it streams; ``signature`` closes a signed block; ``redacted``
    carries a whole encrypted block (Anthropic's redacted_thinking) in one event."""

    index: int
    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    kind: Literal["reasoning"] = "reasoning"


@dataclass(slots=True)
class ToolCallDelta:
    """The first delta of a call carries ``id`` and ``name``; later ones only add
    ``arguments`` text."""

    index: int
    tool_index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    kind: Literal["tool_call"] = "tool_call"


@dataclass(slots=True)
class StreamStop:
    stop_reason: StopReason | None
    stop_sequence: str | None = None
    kind: Literal["stop"] = "stop"


@dataclass(slots=True)
class UsageEvent:
    usage: Usage
    kind: Literal["usage"] = "usage"


@dataclass(slots=True)
class StreamError:
    message: str
    type: str = "upstream_error"
    code: str | None = None
    kind: Literal["error"] = "error"
    #: what ``type`` and ``code`` mean when they are the vendor's own names (see GatewayError.kind)
    error_kind: ErrorKind | None = None


StreamEvent = StreamStart | TextDelta | ReasoningDelta | ToolCallDelta | StreamStop | UsageEvent | StreamError
