"""The ``echo`` channel type, for the made-up echo protocol of the README. The kit's
HttpJsonProvider does URLs, the key header, JSON decoding and malformed answers (502)."""

import uuid
from typing import Any

from faregate.api import (
    ChatRequest,
    ChatResponse,
    GatewayError,
    HttpJsonProvider,
    Message,
    StopReason,
    StreamError,
    StreamEvent,
    StreamParser,
    StreamStop,
    TextDelta,
    TextPart,
    UpstreamTarget,
    Usage,
    UsageEvent,
    bad_request,
    json_loads,
)

#: the channel type admins pick; made-up types stay far above new-api's numbers
ECHO_CHANNEL_TYPE = 9001
_STOP_REASONS: dict[str, StopReason] = {"stop": "stop", "length": "length"}


def _usage(reply: dict[str, Any]) -> Usage:
    return Usage(input_tokens=int(reply.get("tokens_in") or 0), output_tokens=int(reply.get("tokens_out") or 0))


def last_user_text(request: ChatRequest) -> str:
    """Echo has no conversation: it gets the last user message (400 before any call if none)."""
    for message in reversed(request.messages):
        if message.role == "user":
            return message.text()
    raise bad_request("the echo protocol needs a user message", param="messages")


class EchoStreamParser(StreamParser):
    """One per stream. A malformed event raises ValueError: the core ends the stream with an error."""

    def __init__(self) -> None:
        self.done = False  # set at the last event: a stream without it was cut short

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        message = json_loads(data)
        if not isinstance(message, dict):
            raise ValueError("an echo event is a JSON object")
        if "problem" in message:
            return [StreamError(str(message["problem"]), code="echo_problem")]
        if "delta" in message:
            return [TextDelta(index=0, text=str(message["delta"]))]
        if "done_reason" in message:
            self.done = True
            reason = _STOP_REASONS.get(str(message["done_reason"]), "stop")
            return [StreamStop(stop_reason=reason), UsageEvent(usage=_usage(message))]
        return []  # unknown events are ignored, as SSE clients do


class EchoProvider(HttpJsonProvider):
    name = "echo"
    channel_types = (ECHO_CHANNEL_TYPE,)
    native_format = None  # no client speaks echo: requests always come through the canonical model
    default_base_url = "http://127.0.0.1:9001"
    chat_path, models_path = "/echo", None  # echo cannot list its models
    auth_header, auth_prefix = "X-Echo-Key", ""

    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        return {"model": target.model, "prompt": last_user_text(request), "max_tokens": request.max_tokens,
                "stream": target.stream}

    def read_response(self, obj: Any) -> ChatResponse:
        if not isinstance(obj.get("text"), str):  # (not a dict: AttributeError, also a 502)
            raise ValueError("an echo reply has a text")
        return ChatResponse(id="echo-" + uuid.uuid4().hex[:24], model="",  # formats name the client's model
                            message=Message("assistant", [TextPart(obj["text"])]),
                            stop_reason=_STOP_REASONS.get(str(obj.get("done_reason")), "stop"), usage=_usage(obj))

    def stream_parser(self) -> StreamParser:
        return EchoStreamParser()

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        try:
            problem = json_loads(body).get("problem")
        except (ValueError, AttributeError):
            problem = None
        # the client's format renders it in its own error shape; the core redacts secrets
        return GatewayError(status, str(problem or f"echo upstream answered {status}"), type="upstream_error",
                            code="echo_problem", upstream=True)
