"""Gateway errors in Anthropic's error shape: the status and error type the Anthropic
SDK expects (``anthropic_error``) and the ``{"type": "error", …}`` body (``error_payload``)."""

from __future__ import annotations

from typing import Any

from faregate.api import ErrorKind, GatewayError

ANTHROPIC_ERROR_TYPES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_STATUS_TYPES = {status: kind for kind, status in ANTHROPIC_ERROR_TYPES.items()}
_NOT_FOUND_CODES = {"model_not_found"}
#: Anthropic's error types and what each means (an upstream error's kind)
TYPE_KINDS: dict[str, ErrorKind] = {
    "invalid_request_error": ErrorKind.INVALID_REQUEST, "authentication_error": ErrorKind.AUTHENTICATION,
    "billing_error": ErrorKind.BILLING, "permission_error": ErrorKind.PERMISSION,
    "not_found_error": ErrorKind.NOT_FOUND, "request_too_large": ErrorKind.REQUEST_TOO_LARGE,
    "rate_limit_error": ErrorKind.RATE_LIMIT, "api_error": ErrorKind.SERVER, "timeout_error": ErrorKind.TIMEOUT,
    "overloaded_error": ErrorKind.OVERLOADED,
}
#: another vendor's error (its kind) in Anthropic's words
KIND_TYPES: dict[ErrorKind, str] = {
    **{kind: name for name, kind in TYPE_KINDS.items()},
    ErrorKind.CONFLICT: "invalid_request_error", ErrorKind.CANCELLED: "invalid_request_error",
    ErrorKind.NOT_IMPLEMENTED: "not_found_error",
}


def read_kind(err: GatewayError) -> GatewayError:
    """An upstream Anthropic error with its type's meaning as its kind."""
    err.kind = TYPE_KINDS.get(err.type, err.kind)
    return err


def anthropic_error(err: GatewayError) -> tuple[int, str]:
    """The Anthropic status and error type for a gateway error: Anthropic's own types
    pass through; others map by status onto the set the SDK knows."""
    if err.type in ANTHROPIC_ERROR_TYPES and err.upstream:
        return err.status, err.type
    if err.kind is not None:  # another vendor's names (a Gemini status …): what they mean
        kind = KIND_TYPES[err.kind]
        return ANTHROPIC_ERROR_TYPES[kind], kind
    status = err.status
    if err.code in _NOT_FOUND_CODES:
        status = 404  # no channel for the model: not worth a retry (the SDK retries 5xx)
    elif status == 408:
        status = 504
    elif status == 503:
        status = 529
    elif status not in _STATUS_TYPES:
        status = 500 if status >= 500 else 400
    return status, _STATUS_TYPES[status]


def error_payload(err: GatewayError, message: str | None = None) -> tuple[int, dict[str, Any]]:
    status, kind = anthropic_error(err)
    return status, {"type": "error", "error": {"type": kind, "message": message or err.message}}
