"""Cohere's error answers (``{"id": …, "message": …}``, with the HTTP status saying what
went wrong) as gateway errors: the message redacted by the core's reader, a type by status
(the names the OpenAI and Anthropic formats pass on), and Cohere's 498 (a deny-listed or
invalid token) as the 401 it means, so another channel is tried and a dead key disabled."""

from __future__ import annotations

from typing import Any

from faregate.api import GatewayError, json_dumps, json_loads, upstream_error

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_quota",
    403: "permission_error",
    404: "not_found_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    498: "authentication_error",
}


def _message(body: bytes) -> str | None:
    try:
        obj: Any = json_loads(body)
    except ValueError:
        return None
    message = obj.get("message") if isinstance(obj, dict) else None
    return message if isinstance(message, str) and message else None


def parse_error(status: int, body: bytes) -> GatewayError:
    message = _message(body)
    if message is None:
        return upstream_error(status, body)  # not Cohere's shape (a proxy's page): neutral, not passed on
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    err = upstream_error(status, json_dumps({"error": {"message": message, "type": kind, "code": kind}}))
    if status == 498:
        err.status, err.code = 401, "invalid_api_key"
    return err
