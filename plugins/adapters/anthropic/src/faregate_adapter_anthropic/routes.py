"""``POST /v1/messages/count_tokens``: a local estimate of a Messages request's input
tokens (no upstream call, no charge)."""

from __future__ import annotations

import math
from typing import Any

from quart import Blueprint, Response, current_app

from faregate import jsonutil
from faregate.errors import GatewayError, bad_request
from faregate.relay.pipeline import check_model_allowed, new_request_id, read_json_body
from faregate_adapter_anthropic.format import FORMAT_NAME, AnthropicMessagesFormat

IMAGE_TOKENS = 1600  # Anthropic's cost of a full-size image (~1.15 megapixels)
MESSAGE_OVERHEAD = 3
_JSON = "application/json"


def text_tokens(text: str) -> int:
    """~4 characters per token for ASCII text; other scripts (CJK …) about one token
    per character."""
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


def _content_tokens(content: Any) -> int:
    if isinstance(content, str):
        return text_tokens(content)
    total = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                total += text_tokens(str(block.get("text", "")))
            elif kind == "image":
                total += IMAGE_TOKENS
            elif kind == "tool_use":
                total += text_tokens(str(block.get("name", ""))) + text_tokens(jsonutil.dumps_str(
                    block.get("input") or {}))
            elif kind == "tool_result":
                total += _content_tokens(block.get("content")) + MESSAGE_OVERHEAD
            elif kind == "thinking":
                total += text_tokens(str(block.get("thinking", "")))
            elif kind == "document":
                total += text_tokens(jsonutil.dumps_str(block.get("source") or {}))
    return total


def estimate_input_tokens(body: dict[str, Any]) -> int:
    total = _content_tokens(body.get("system"))
    for msg in body.get("messages") or []:
        if isinstance(msg, dict):
            total += MESSAGE_OVERHEAD + _content_tokens(msg.get("content"))
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        total += text_tokens(jsonutil.dumps_str(tools)) + 10 * len(tools)
    return max(1, total)


def _format() -> AnthropicMessagesFormat:
    fmt = current_app.faregate.formats.get(FORMAT_NAME)  # type: ignore[attr-defined]
    return fmt if isinstance(fmt, AnthropicMessagesFormat) else AnthropicMessagesFormat()


async def count_tokens() -> Response:
    gw = current_app.faregate  # type: ignore[attr-defined]
    fmt = _format()
    rid = new_request_id()
    try:
        principal = await gw.relay.authenticate_request(fmt)
        _, body = await read_json_body()
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise bad_request("model: Field required", param="model")
        if not isinstance(body.get("messages"), list):
            raise bad_request("messages: Field required", param="messages")
        check_model_allowed(principal, model)
    except GatewayError as err:
        status, payload = fmt.render_error(err, rid)
        return Response(payload, status=status, content_type=_JSON)
    return Response(jsonutil.dumps({"input_tokens": estimate_input_tokens(body)}), content_type=_JSON,
                    headers={"X-Oneapi-Request-Id": rid})


def make_blueprint() -> Blueprint:
    """A fresh blueprint per app (tests run several gateways in one process)."""
    bp = Blueprint("anthropic_messages", __name__)
    bp.add_url_rule("/v1/messages/count_tokens", endpoint="count_tokens", view_func=count_tokens,
                    methods=["POST"])
    return bp
