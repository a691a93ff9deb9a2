"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``, as an
answer body and as an in-band stream event. Another vendor's error (one whose provider
read its names into a kind: Anthropic's ``rate_limit_error``, Google's
``RESOURCE_EXHAUSTED``) is named in OpenAI's words, so a client branching on ``type`` or
``code`` sees the values it knows."""

from __future__ import annotations

from typing import Any

from faregate.api import ErrorKind, GatewayError, json_dumps

#: (type, code) of each kind of error, as OpenAI names them
KIND_NAMES: dict[ErrorKind, tuple[str, str | None]] = {
    ErrorKind.INVALID_REQUEST: ("invalid_request_error", None),
    ErrorKind.AUTHENTICATION: ("invalid_request_error", "invalid_api_key"),
    ErrorKind.BILLING: ("insufficient_quota", "insufficient_quota"),
    ErrorKind.PERMISSION: ("invalid_request_error", "permission_denied"),
    ErrorKind.NOT_FOUND: ("invalid_request_error", "not_found"),
    ErrorKind.CONFLICT: ("invalid_request_error", "conflict"),
    ErrorKind.REQUEST_TOO_LARGE: ("invalid_request_error", "request_too_large"),
    ErrorKind.RATE_LIMIT: ("rate_limit_exceeded", "rate_limit_exceeded"),
    ErrorKind.CANCELLED: ("invalid_request_error", "cancelled"),
    ErrorKind.SERVER: ("server_error", None),
    ErrorKind.NOT_IMPLEMENTED: ("invalid_request_error", "not_implemented"),
    ErrorKind.OVERLOADED: ("server_error", "overloaded"),
    ErrorKind.TIMEOUT: ("server_error", "timeout"),
}


def error_body(err: GatewayError, message: str) -> dict[str, Any]:
    kind, code = (err.type, err.code) if err.kind is None else KIND_NAMES[err.kind]
    return {"error": {"message": message, "type": kind, "param": err.param or "", "code": code}}


def error_event(err: GatewayError) -> bytes:
    """The error as the last ``data:`` event of a stream (OpenAI sends ``param: null`` there)."""
    body = error_body(err, err.message)
    body["error"]["param"] = None
    return b"data: " + json_dumps(body) + b"\n\n"
