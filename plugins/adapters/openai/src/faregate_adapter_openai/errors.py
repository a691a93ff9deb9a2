"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``, as an
answer body and as an in-band stream event."""

from __future__ import annotations

from typing import Any

from faregate.api import GatewayError, json_dumps


def error_body(err: GatewayError, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": err.type, "param": err.param or "", "code": err.code}}


def error_event(err: GatewayError) -> bytes:
    """The error as the last ``data:`` event of a stream (OpenAI sends ``param: null`` there)."""
    body = error_body(err, err.message)
    body["error"]["param"] = None
    return b"data: " + json_dumps(body) + b"\n\n"
