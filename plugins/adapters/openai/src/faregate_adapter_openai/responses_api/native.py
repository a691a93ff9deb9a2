"""The Responses API on channels that serve it themselves (OpenAI and the OpenAI-compatible
types): the client's body goes up as it came (only the model renamed when the channel maps
it) and the answer comes back unchanged. A regular answer's ``usage`` is read on the side; a
stream's events are forwarded as they arrive, its usage read from the final
``response.completed`` (or ``response.incomplete`` / ``response.failed``). An ``error``
event is the upstream failing: before the first byte another channel is tried, after it
the client gets it as the format's ``error`` event. A stream that ends without its final
event is billed on the output seen (never free)."""

from __future__ import annotations

from typing import Any

from faregate.api import (
    Exchange,
    GatewayError,
    JSONDecodeError,
    PassthroughStream,
    Provider,
    RequestSummary,
    UpstreamRequest,
    UpstreamTarget,
    Usage,
    json_loads,
    malformed_response,
)
from faregate_adapter_openai.endpoints import JsonEndpointProvider
from faregate_adapter_openai.responses_api.render import output_chars, parse_usage

RESPONSES = "responses"
#: events whose ``delta`` is generated text (billed by its length when no usage comes)
TEXT_DELTAS = frozenset({
    "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta",
    "response.reasoning_summary_text.delta", "response.reasoning_text.delta", "response.custom_tool_call_input.delta",
    "response.audio.transcript.delta", "response.code_interpreter_call_code.delta", "response.mcp_call_arguments.delta",
})
#: the events that end a response, each carrying it whole (with its usage)
FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


class ResponsesPassthrough(PassthroughStream):
    """Forwards a Responses stream's events unchanged; reads usage and output size."""

    def __init__(self) -> None:
        self.usage: Usage | None = None
        self.done = False
        self.error: GatewayError | None = None
        self.output_chars = 0

    def feed(self, event: str | None, data: bytes) -> bool:
        if data == b"[DONE]":  # not OpenAI's, but some compatible servers end with it
            self.done = True
            return True
        try:
            obj = json_loads(data)
        except JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            # garbage would break the client's SDK: fail over before the first byte, in-band after
            self.error = GatewayError(502, "upstream sent a malformed stream event", code="bad_response_body",
                                      upstream=True)
            return False
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = event
        if kind in TEXT_DELTAS:
            delta = obj.get("delta")
            if isinstance(delta, str):
                self.output_chars += len(delta)
        elif kind in FINAL:
            self.done = True
            response = obj.get("response")
            if isinstance(response, dict):
                self.usage = parse_usage(response.get("usage"))
        elif kind == "error":
            code, param = obj.get("code"), obj.get("param")
            self.error = GatewayError(502, str(obj.get("message") or "upstream error"), type="upstream_error",
                                      code=code if isinstance(code, str) else None,
                                      param=param if isinstance(param, str) else None, upstream=True)
            return False  # the relay sends it through the format's error() instead
        return True


class ResponsesNative:
    """The :class:`faregate.api.NativeEndpoint` of ``responses``: channels whose provider
    declares the endpoint and builds JSON requests for it (``build_json``)."""

    endpoint = RESPONSES

    def serves(self, provider: Provider, channel_type: int) -> bool:
        return provider.serves(RESPONSES, channel_type) and isinstance(provider, JsonEndpointProvider)

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget) -> UpstreamRequest:
        assert isinstance(provider, JsonEndpointProvider)
        body: dict[str, Any] = ex.body
        raw = ex.raw
        if target.model != body.get("model"):  # the channel's mapping: the one change
            body, raw = {**body, "model": target.model}, b""
        return provider.build_json(RESPONSES, body, raw, target)

    def read_usage(self, body: bytes) -> tuple[Usage | None, int]:
        try:
            obj = json_loads(body)
        except JSONDecodeError:
            raise malformed_response() from None
        if not isinstance(obj, dict) or not isinstance(obj.get("output"), list):
            raise malformed_response()
        usage = parse_usage(obj.get("usage"))
        return usage, 0 if usage is not None else output_chars(obj["output"])

    def passthrough_stream(self, summary: RequestSummary) -> PassthroughStream:
        return ResponsesPassthrough()


NATIVE = ResponsesNative()
