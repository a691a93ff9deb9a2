"""Dify's error answers (``{"code": "invalid_param", "message": …, "status": 400}``) as
gateway errors: the message redacted by the core's reader, Dify's ``code`` as the code,
and a refused app key (401 ``unauthorized``) as the dead key it is."""

from __future__ import annotations

from typing import Any

from faregate.api import GatewayError, json_dumps, json_loads, upstream_error

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "invalid_request_error", 415: "invalid_request_error",
               429: "rate_limit_error"}


def parse_error(status: int, body: bytes) -> GatewayError:
    try:
        obj: Any = json_loads(body)
    except ValueError:
        obj = None
    message = obj.get("message") if isinstance(obj, dict) else None
    if not isinstance(message, str) or not message:
        return upstream_error(status, body)  # not Dify's shape (a proxy's page): neutral, not passed on
    code = obj.get("code")
    code = code if isinstance(code, str) and code else None
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    err = upstream_error(status, json_dumps({"error": {"message": message, "type": kind, "code": code}}))
    if status == 401:
        err.code = "invalid_api_key"  # the app's key: dead for every request, as new-api judges it
    return err
