"""App-wide error answers for what no endpoint handled: unknown paths and methods,
oversized bodies outside the exchange, unexpected exceptions. JSON always, never an
HTML page; valid in a WebSocket context too (a refused upgrade is an HTTP answer)."""

from __future__ import annotations

import logging

from quart import Quart, Response, has_websocket_context, request, websocket
from werkzeug.exceptions import HTTPException

from faregate import jsonutil
from faregate.errors import GatewayError

log = logging.getLogger("faregate")


def install(app: Quart) -> None:
    @app.errorhandler(404)
    async def _not_found(_: Exception) -> Response:
        method, path = _current()
        return _answer(path, 404, f"Invalid URL ({method} {path})")

    @app.errorhandler(405)
    async def _not_allowed(_: Exception) -> Response:
        method, path = _current()
        return _answer(path, 405, f"Method not allowed ({method} {path})")

    @app.errorhandler(413)
    async def _too_large(_: Exception) -> Response:
        path = _current()[1]
        if _is_management(path):
            return _answer(path, 413, "request body too large")
        return json_error(413, "request body too large", "invalid_request_error", "request_too_large")

    @app.errorhandler(Exception)
    async def _unexpected(err: Exception) -> Response:
        if isinstance(err, HTTPException):
            return json_error(err.code or 500, err.description or err.name, "invalid_request_error")
        method, path = _current()
        log.exception("unhandled error on %s %s", method, path)
        if _is_management(path):
            return _answer(path, 500, "internal error")
        return json_error(500, "internal error", "new_api_error", "internal_error")

    @app.errorhandler(GatewayError)
    async def _gateway_error(err: GatewayError) -> Response:
        return json_error(err.status, err.message, err.type, err.code)


def _current() -> tuple[str, str]:
    if has_websocket_context():
        return "WEBSOCKET", websocket.path
    return request.method, request.path


def _is_management(path: str) -> bool:
    return path == "/api" or path.startswith("/api/")


def _answer(path: str, status: int, message: str) -> Response:
    """The management API's ``{success, message}`` envelope under ``/api``, the OpenAI error elsewhere:
    a script reading ``success`` must not meet an OpenAI-shaped body."""
    if _is_management(path):
        return Response(jsonutil.dumps({"success": False, "message": message}), status=status,
                        content_type="application/json")
    return json_error(status, message, "invalid_request_error")


def json_error(status: int, message: str, type_: str, code: str | None = None) -> Response:
    body = {"error": {"message": message, "type": type_, "param": "", "code": code}}
    return Response(jsonutil.dumps(body), status=status, content_type="application/json")
