"""Replicate's error answers as gateway errors. Replicate answers problem details
(``{"title", "detail", "status"}``, with ``invalid_fields`` for a 422) or a bare
``{"detail": …}``; the detail is the message, redacted by the core's reader."""

from __future__ import annotations

from typing import Any

from faregate.api import GatewayError, json_dumps, json_loads, upstream_error

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "insufficient_quota",
               403: "permission_error", 404: "not_found_error", 422: "invalid_request_error",
               429: "rate_limit_error"}


def parse_error(status: int, body: bytes) -> GatewayError:
    try:
        obj: Any = json_loads(body)
    except ValueError:
        obj = None
    detail = obj.get("detail") if isinstance(obj, dict) else None
    if not isinstance(detail, str) or not detail:
        return upstream_error(status, body)  # not Replicate's shape: neutral, not passed on
    title = obj.get("title")
    message = f"{title}: {detail}" if isinstance(title, str) and title and title not in detail else detail
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    err = upstream_error(status, json_dumps({"error": {"message": message, "type": kind, "code": kind}}))
    if status == 401:
        err.code = "invalid_api_key"
    return err
