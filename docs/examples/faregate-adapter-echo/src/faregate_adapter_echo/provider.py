"""The ``echo`` channel type: how to call an echo upstream and read what it answers.

The echo wire protocol (made up for this example; it is deliberately not OpenAI's):

* request: ``POST {base_url}/echo`` with header ``X-Echo-Key: <channel key>`` and
  ``{"model": str, "prompt": str, "max_tokens": int | null, "stream": bool}``
* regular reply: ``{"text": str, "tokens_in": int, "tokens_out": int,
  "done_reason": "stop" | "length"}``
* streaming reply: Server-Sent Events ``data: {"delta": str}`` …, then one
  ``data: {"done_reason": str, "tokens_in": int, "tokens_out": int}``
* errors: any non-200 status with ``{"problem": str}``

Because no client speaks echo, every request reaches this provider through the
canonical model: the client's format plugin parses the request into a
:class:`~faregate.canonical.ChatRequest`, :meth:`EchoProvider.build_request` turns that
into echo JSON, and the canonical response/stream events this module returns are
rendered back in the client's format by the same format plugin.
"""

from __future__ import annotations

import uuid
from typing import Any

from faregate.api import (
    ChatRequest,
    ChatResponse,
    GatewayError,
    JSONDecodeError,
    Message,
    Provider,
    StopReason,
    StreamError,
    StreamEvent,
    StreamParser,
    StreamStop,
    TextDelta,
    TextPart,
    UpstreamRequest,
    UpstreamTarget,
    Usage,
    UsageEvent,
    bad_request,
    json_dumps,
    json_loads,
)

#: The channel type number admins pick when they add an echo channel. Real plugins
#: use new-api's numbers for known vendors; made-up types should stay far above them.
ECHO_CHANNEL_TYPE = 9001

# echo's done_reason → the canonical stop reason
_STOP_REASONS: dict[str, StopReason] = {"stop": "stop", "length": "length"}


def _malformed() -> GatewayError:
    # 502 + upstream=True: the upstream misbehaved, not the client
    return GatewayError(502, "echo upstream returned a malformed response", type="upstream_error",
                        code="bad_response_body", upstream=True)


def _usage(reply: dict[str, Any]) -> Usage:
    return Usage(input_tokens=int(reply.get("tokens_in") or 0), output_tokens=int(reply.get("tokens_out") or 0))


def last_user_text(request: ChatRequest) -> str:
    """Echo has no conversation: it gets the text of the last user message."""
    for message in reversed(request.messages):
        if message.role == "user":
            return message.text()
    raise bad_request("the echo protocol needs a user message", param="messages")


class EchoStreamParser(StreamParser):
    """One per stream: turns each echo SSE event into canonical stream events."""

    def __init__(self) -> None:
        self.done = False

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        try:
            message = json_loads(data)
        except JSONDecodeError:
            raise _malformed() from None
        if not isinstance(message, dict):
            raise _malformed()
        if "problem" in message:  # an error after the stream started
            return [StreamError(str(message["problem"]), code="echo_problem")]
        if "delta" in message:
            # index 0: echo answers with a single text block
            return [TextDelta(index=0, text=str(message["delta"]))]
        if "done_reason" in message:
            self.done = True  # tells the core the stream is complete (not cut short)
            reason = _STOP_REASONS.get(str(message["done_reason"]), "stop")
            return [StreamStop(stop_reason=reason), UsageEvent(usage=_usage(message))]
        return []  # unknown events are ignored, as SSE clients do


class EchoProvider(Provider):
    """Stateless, and every method is a pure function of its inputs: the core does the
    HTTP, retries, billing and rendering."""

    name = "echo"
    channel_types = (ECHO_CHANNEL_TYPE,)
    native_format = None  # no client speaks echo: always go through the canonical model
    default_base_url = "http://127.0.0.1:9001"

    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest:
        body = {
            "model": target.model,  # already mapped by the channel's model mapping
            "prompt": last_user_text(request),
            "max_tokens": request.max_tokens,
            "stream": target.stream,
        }
        headers = {"Content-Type": "application/json", "X-Echo-Key": target.key}
        if target.stream:
            headers["Accept"] = "text/event-stream"
        return UpstreamRequest("POST", target.base_url.rstrip("/") + "/echo", headers, json_dumps(body))

    def parse_response(self, body: bytes) -> ChatResponse:
        try:
            reply = json_loads(body)
        except JSONDecodeError:
            raise _malformed() from None
        if not isinstance(reply, dict) or not isinstance(reply.get("text"), str):
            raise _malformed()
        return ChatResponse(
            id="echo-" + uuid.uuid4().hex[:24],
            model="",  # echo does not name the model; formats render the one the client asked for
            message=Message("assistant", [TextPart(reply["text"])]),
            stop_reason=_STOP_REASONS.get(str(reply.get("done_reason")), "stop"),
            usage=_usage(reply),
        )

    def stream_parser(self) -> StreamParser:
        return EchoStreamParser()

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        try:
            problem = json_loads(body).get("problem")
        except (JSONDecodeError, AttributeError):
            problem = None
        message = str(problem) if problem else f"echo upstream answered {status}"
        # the client's format renders this in its own error shape (OpenAI: {"error": {...}})
        return GatewayError(status, message, type="upstream_error", code="echo_problem", upstream=True)
