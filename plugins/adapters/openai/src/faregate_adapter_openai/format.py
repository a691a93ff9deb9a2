"""The inbound format ``openai.chat``: what OpenAI SDK clients speak."""

from __future__ import annotations

from typing import Any

from faregate.api import (
    INT64_MAX,
    INT64_MIN,
    MAX_OUTPUT_TOKENS,
    WEBSOCKET,
    ChatRequest,
    ChatResponse,
    GatewayError,
    InboundFormat,
    InboundRequest,
    ModelInfo,
    NumberBound,
    RequestSummary,
    Route,
    StreamEncoder,
    bad_request,
    check_numbers,
    estimator,
    json_dumps,
)
from faregate_adapter_openai import (
    audio,
    dashboard,
    endpoints,
    errors,
    images,
    media_tokens,
    not_implemented,
    realtime,
    requests,
    rerank,
    responses,
    streams,
)
from faregate_adapter_openai.realtime import protocol as realtime_protocol

FORMAT_NAME = "openai.chat"
#: ``/v1/completions``' body cap, in MiB: text only, yet a batch of long prompts (or of token
#: arrays, about 7 bytes a token) may be large; OpenAI bounds each prompt by the model's context
COMPLETIONS_MAX_BODY_MB = 16.0


#: the numeric fields of a chat completion request and their ranges (OpenAI's API reference)
NUMBERS = {
    "max_tokens": NumberBound(1, MAX_OUTPUT_TOKENS, integer=True),
    "max_completion_tokens": NumberBound(1, MAX_OUTPUT_TOKENS, integer=True),
    "temperature": NumberBound(0, 2),
    "top_p": NumberBound(0, 1),
    "n": NumberBound(1, 128, integer=True),
    "presence_penalty": NumberBound(-2, 2),
    "frequency_penalty": NumberBound(-2, 2),
    "seed": NumberBound(INT64_MIN, INT64_MAX, integer=True),
    "top_logprobs": NumberBound(0, 20, integer=True),
}


#: the output bound's names: ``max_tokens`` (deprecated by OpenAI, the only one many vendors know)
BOUND_FIELDS = ("max_completion_tokens", "max_tokens")


def output_bound(body: dict[str, Any]) -> int | None:
    """The client's output bound per choice: the larger where it gives both (the upstream may
    honour either; a vendor that knows only ``max_tokens`` keeps that one), None when neither."""
    given = [body[name] for name in BOUND_FIELDS if body.get(name) is not None]
    return max(given) if given else None


def prompt_tokens(body: dict[str, Any]) -> int:
    """The shared estimate of a chat request's input: message text, images and audio (by
    OpenAI's rules, from their headers: :mod:`.media_tokens`), tools. Text is counted by the
    estimator: its rule, or the model's exact tokenizer where the core puts one in force."""
    total = 0
    for msg in body.get("messages") or ():
        if not isinstance(msg, dict):
            continue
        total += estimator.MESSAGE_OVERHEAD
        content = msg.get("content")
        if isinstance(content, str):
            total += estimator.text(content)
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    continue
                text = part.get("text")
                if isinstance(text, str):
                    total += estimator.text(text)
                elif part.get("type") == "image_url":
                    total += media_tokens.image_tokens(part.get("image_url"))
                elif part.get("type") == "input_audio":
                    total += media_tokens.audio_tokens(part.get("input_audio"))
                else:  # files …: a flat allowance, the upstream bills the truth
                    total += estimator.IMAGE_TOKENS
        for call in msg.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                total += estimator.json(call["function"])
    tools = body.get("tools")
    if isinstance(tools, list):
        total += estimator.tools(tools)
    return total


class OpenAIChatFormat(InboundFormat):
    name = FORMAT_NAME

    def routes(self) -> list[Route]:
        return [Route("POST", "/v1/chat/completions"),
                # new-api's playground: chat for the logged-in user (session, not an API key)
                Route("POST", "/pg/chat/completions", kind="playground", options={"auth": "session"}),
                Route("POST", "/v1/embeddings", kind="embeddings", max_body_mb=endpoints.EMBEDDINGS_MAX_BODY_MB),
                # new-api's engines path: the model in the path, not the body
                Route("POST", "/v1/engines/{model}/embeddings", kind="embeddings",
                      max_body_mb=endpoints.EMBEDDINGS_MAX_BODY_MB),
                Route("POST", "/v1/moderations", kind="moderations", max_body_mb=endpoints.MODERATIONS_MAX_BODY_MB),
                Route("POST", "/v1/completions", kind="completions", max_body_mb=COMPLETIONS_MAX_BODY_MB),
                Route("POST", "/v1/rerank", kind="rerank", max_body_mb=rerank.MAX_BODY_MB),
                Route("POST", "/v1/alpha/search", kind="alpha_search", max_body_mb=1),
                Route(WEBSOCKET, realtime.PATH, kind=realtime.REALTIME),
                *images.ROUTES,
                *audio.ROUTES,
                *not_implemented.ROUTES,
                *dashboard.ROUTES]

    def api_key(self, request: InboundRequest) -> str | None:
        """``Authorization: Bearer``; a WebSocket (the Realtime API) may carry it as the
        subprotocol ``openai-insecure-api-key.<key>`` instead, where a browser cannot set headers."""
        key = realtime_protocol.subprotocol_key(request.subprotocols) if request.subprotocols else None
        return key or super().api_key(request)

    def summarize(self, body: dict[str, Any], request: InboundRequest) -> RequestSummary:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise bad_request("model is required", param="model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise bad_request("messages must be a non-empty array", param="messages")
        check_numbers(body, NUMBERS)
        bound = output_bound(body)
        answers = body.get("n") or 1
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            raise bad_request("stream must be a boolean", param="stream")
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        total = None if bound is None else min(MAX_OUTPUT_TOKENS, bound * answers)  # every choice may use it
        return RequestSummary(model=model, stream=stream, max_tokens=total, include_usage=include_usage,
                              prompt_tokens=prompt_tokens(body), answers=answers, sends_output_cap=True)

    def parse(self, body: dict[str, Any], summary: RequestSummary) -> ChatRequest:
        request = requests.parse_request(body)
        request.model = summary.model
        return request

    def render_response(self, response: ChatResponse, requested_model: str) -> dict[str, Any]:
        return responses.render_response(response, requested_model)

    def stream_encoder(self, summary: RequestSummary, request_id: str) -> StreamEncoder:
        return streams.OpenAIStreamEncoder(summary.model, request_id, summary.include_usage)

    def add_system_prompt(self, body: dict[str, Any], prompt: str,
                          override: bool) -> tuple[dict[str, Any], bool] | None:
        """A system message first, or the channel's prompt before the request's own."""
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        first = next((i for i, m in enumerate(messages)
                      if isinstance(m, dict) and m.get("role") in ("system", "developer")), None)
        if first is None:
            return {**body, "messages": [{"role": "system", "content": prompt}, *messages]}, False
        if not override:
            return None
        own = messages[first]
        content = own.get("content")
        if isinstance(content, str):
            content = f"{prompt}\n{content}" if content else prompt
        elif isinstance(content, list):
            content = [{"type": "text", "text": prompt}, *content]
        else:
            content = prompt
        changed = [*messages[:first], {**own, "content": content}, *messages[first + 1:]]
        return {**body, "messages": changed}, True

    def add_output_cap(self, body: dict[str, Any], tokens: int) -> dict[str, Any] | None:
        """``max_completion_tokens`` (a vendor that knows only ``max_tokens`` gets it renamed by
        its preset, as a client's own); a ``null`` bound is dropped, not kept beside it."""
        return {**{k: v for k, v in body.items() if k not in BOUND_FIELDS}, "max_completion_tokens": tokens}

    def render_error(self, err: GatewayError, request_id: str) -> tuple[int, bytes]:
        return err.status, json_dumps(errors.error_body(err, f"{err.message} (request id: {request_id})"))

    def render_model_list(self, models: list[ModelInfo], request: InboundRequest) -> dict[str, Any]:
        return {"success": True, "object": "list", "data": [self.render_model(m) for m in models]}

    def render_model(self, model: ModelInfo) -> dict[str, Any]:
        return {"id": model.id, "object": "model", "created": model.created, "owned_by": model.owned_by}
