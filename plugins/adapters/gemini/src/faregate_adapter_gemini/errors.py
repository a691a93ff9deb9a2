"""Errors in Gemini's shape, both ways: the gateway's errors as Google's
``{"error": {"code", "message", "status", "details"}}`` on the native routes, and an
upstream Gemini error answer read into a :class:`GatewayError`."""

from __future__ import annotations

from typing import Any

from faregate.api import ErrorKind, GatewayError, json_dumps, json_loads, upstream_error

#: Google's canonical error codes (``google.rpc.Code``) and the HTTP status of each
GOOGLE_STATUSES: dict[str, int] = {
    "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400, "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403, "NOT_FOUND": 404, "ABORTED": 409, "ALREADY_EXISTS": 409,
    "RESOURCE_EXHAUSTED": 429, "CANCELLED": 499, "DATA_LOSS": 500, "UNKNOWN": 500, "INTERNAL": 500,
    "UNIMPLEMENTED": 501, "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504,
}
#: the Google status a gateway error of each HTTP status is reported as
_BY_HTTP: dict[int, str] = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 402: "FAILED_PRECONDITION", 403: "PERMISSION_DENIED",
    404: "NOT_FOUND", 405: "UNIMPLEMENTED", 408: "DEADLINE_EXCEEDED", 409: "ABORTED", 413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED", 502: "UNAVAILABLE",
    503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}
#: Google's statuses and what each means (an upstream error's kind)
STATUS_KINDS: dict[str, ErrorKind] = {
    "INVALID_ARGUMENT": ErrorKind.INVALID_REQUEST, "FAILED_PRECONDITION": ErrorKind.INVALID_REQUEST,
    "OUT_OF_RANGE": ErrorKind.INVALID_REQUEST, "UNAUTHENTICATED": ErrorKind.AUTHENTICATION,
    "PERMISSION_DENIED": ErrorKind.PERMISSION, "NOT_FOUND": ErrorKind.NOT_FOUND, "ABORTED": ErrorKind.CONFLICT,
    "ALREADY_EXISTS": ErrorKind.CONFLICT, "RESOURCE_EXHAUSTED": ErrorKind.RATE_LIMIT,
    "CANCELLED": ErrorKind.CANCELLED, "DATA_LOSS": ErrorKind.SERVER, "UNKNOWN": ErrorKind.SERVER,
    "INTERNAL": ErrorKind.SERVER, "UNIMPLEMENTED": ErrorKind.NOT_IMPLEMENTED, "UNAVAILABLE": ErrorKind.OVERLOADED,
    "DEADLINE_EXCEEDED": ErrorKind.TIMEOUT,
}
#: another vendor's error (its kind) as a Google status
KIND_STATUSES: dict[ErrorKind, str] = {
    ErrorKind.INVALID_REQUEST: "INVALID_ARGUMENT", ErrorKind.AUTHENTICATION: "UNAUTHENTICATED",
    ErrorKind.BILLING: "FAILED_PRECONDITION", ErrorKind.PERMISSION: "PERMISSION_DENIED",
    ErrorKind.NOT_FOUND: "NOT_FOUND", ErrorKind.CONFLICT: "ABORTED", ErrorKind.REQUEST_TOO_LARGE: "INVALID_ARGUMENT",
    ErrorKind.RATE_LIMIT: "RESOURCE_EXHAUSTED", ErrorKind.CANCELLED: "CANCELLED", ErrorKind.SERVER: "INTERNAL",
    ErrorKind.NOT_IMPLEMENTED: "UNIMPLEMENTED", ErrorKind.OVERLOADED: "UNAVAILABLE",
    ErrorKind.TIMEOUT: "DEADLINE_EXCEEDED",
}
_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
#: an upstream ``ErrorInfo.reason`` that means the channel's key is dead
_DEAD_KEY_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED"})


def google_status(err: GatewayError) -> str:
    """The Google status name of ``err``: an upstream Gemini error's own, else by HTTP status."""
    if err.upstream and err.type in GOOGLE_STATUSES:
        return err.type
    if err.kind is not None:  # another vendor's names (Anthropic's rate_limit_error …): what they mean
        return KIND_STATUSES[err.kind]
    found = _BY_HTTP.get(err.status)
    if found is not None:
        return found
    return "INTERNAL" if err.status >= 500 else "INVALID_ARGUMENT"


def error_object(err: GatewayError, message: str | None = None) -> dict[str, Any]:
    """The ``error`` object: the HTTP status as ``code``; a field the error names as a
    ``BadRequest`` field violation; the gateway's own code (new-api's: ``model_not_found``,
    ``insufficient_user_quota`` …) as an ``ErrorInfo`` reason."""
    text = message or err.message
    body: dict[str, Any] = {"code": err.status, "message": text, "status": google_status(err)}
    details: list[dict[str, Any]] = []
    if err.param:
        details.append({"@type": _BAD_REQUEST, "fieldViolations": [{"field": err.param, "description": err.message}]})
    if err.code and not err.upstream:
        details.append({"@type": _ERROR_INFO, "reason": err.code.upper(), "domain": "faregate"})
    if details:
        body["details"] = details
    return body


def render_error(err: GatewayError, request_id: str) -> tuple[int, bytes]:
    """The answer to a failed request: its status and ``{"error": {...}}`` body, the message
    naming the request id (as new-api's do) for the operator's logs."""
    return err.status, json_dumps({"error": error_object(err, f"{err.message} (request id: {request_id})")})


def _google_error(body: bytes) -> dict[str, Any] | None:
    """The ``error`` object of a Google error body (also inside a one-element array, as
    a JSON-array stream answers), None when the body is no such thing."""
    try:
        parsed = json_loads(body)
    except ValueError:
        return None
    if isinstance(parsed, list) and len(parsed) == 1:
        parsed = parsed[0]
    err = parsed.get("error") if isinstance(parsed, dict) else None
    return err if isinstance(err, dict) else None


def _reasons(err: dict[str, Any]) -> set[str]:
    details = err.get("details")
    if not isinstance(details, list):
        return set()
    return {str(d.get("reason")) for d in details if isinstance(d, dict) and d.get("reason")}


def parse_error(status: int, body: bytes) -> GatewayError:
    """An upstream Gemini error answer: its Google status is the error's type and code;
    a dead channel key (``API_KEY_INVALID``, which Google answers with 400) becomes a 401
    ``invalid_api_key`` so the core retries another channel and may disable this one."""
    obj = _google_error(body)
    if obj is None:
        return upstream_error(status, body)  # not Google's shape: neutral, not passed on
    err = upstream_error(status, json_dumps({"error": obj}))  # message redacted by the core's reader
    name = obj.get("status")
    if isinstance(name, str) and name in GOOGLE_STATUSES:
        err.type = err.code = name
        err.kind = STATUS_KINDS[name]
    if _reasons(obj) & _DEAD_KEY_REASONS:
        err.status, err.code, err.type = 401, "invalid_api_key", "UNAUTHENTICATED"
        err.kind = ErrorKind.AUTHENTICATION
        err.message = "the upstream refused the channel's API key"
    return err


def stream_error(obj: Any) -> GatewayError:
    """An error object a stream carried in place of a chunk."""
    obj = obj if isinstance(obj, dict) else {}
    code = obj.get("code")
    status = code if isinstance(code, int) and 400 <= code <= 599 else 502
    name = obj.get("status")
    kind = name if isinstance(name, str) and name in GOOGLE_STATUSES else "INTERNAL"
    return GatewayError(status, str(obj.get("message") or "upstream error"), type=kind, code=kind, upstream=True,
                        kind=STATUS_KINDS[kind])
