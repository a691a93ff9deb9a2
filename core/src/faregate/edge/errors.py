"""App-wide error answers for what no endpoint handled: unknown paths and methods,
oversized bodies outside the exchange, unexpected exceptions (a 503 when the database is out
of reach or busy, :func:`faregate.db.outages.is_unavailable`). JSON always, never an HTML page;
valid in a WebSocket context too (a refused upgrade is an HTTP answer).

An unknown path is answered in the error shape its client reads: the management API's
envelope under ``/api``; the shape of the format that claims the path (by its prefix,
``InboundFormat.claims_path``, or on a shared ``/v1/`` path by the client's headers,
``claims_model_list``); OpenAI's otherwise."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from quart import Quart, Response, has_websocket_context, request, websocket
from werkzeug.exceptions import HTTPException

from faregate import jsonutil
from faregate.contracts import InboundFormat, Route
from faregate.contracts.inbound import InboundRequest
from faregate.db.outages import is_unavailable
from faregate.edge.routes import DEFAULT_FORMAT, is_management
from faregate.errors import GatewayError
from faregate.exchange.exchange import new_request_id
from faregate.observe.causes import describe_failure
from faregate.observe.logs import request_id_var

log = logging.getLogger("faregate")

#: what a request the database could not serve (down, restarting, busy) is told
DB_UNAVAILABLE = "the database is unavailable or busy; try again"
#: the path prefix several formats' clients share (OpenAI's, Anthropic's, Gemini's ``/v1``)
SHARED_PREFIX = "/v1/"


def install(app: Quart, formats: Mapping[str, InboundFormat] | None = None) -> None:
    claimants = [fmt for name, fmt in (formats or {}).items() if name != DEFAULT_FORMAT]

    @app.errorhandler(404)
    async def _not_found(_: Exception) -> Response:
        method, path = _current()
        fmt = _claimant(claimants, path)
        if fmt is not None:
            return _in_format(fmt, 404, f"Invalid URL ({method} {path})")
        return _answer(path, 404, f"Invalid URL ({method} {path})")

    @app.errorhandler(405)
    async def _not_allowed(_: Exception) -> Response:
        method, path = _current()
        fmt = _claimant(claimants, path)
        if fmt is not None:  # a vendor's API answers a path it has not for this method as not found
            return _in_format(fmt, 404, f"Invalid URL ({method} {path})")
        return _answer(path, 405, f"Method not allowed ({method} {path})")

    @app.errorhandler(413)
    async def _too_large(_: Exception) -> Response:
        path = _current()[1]
        if is_management(path):
            return _answer(path, 413, "request body too large")
        return json_error(413, "request body too large", "invalid_request_error", "request_too_large")

    @app.errorhandler(Exception)
    async def _unexpected(err: Exception) -> Response:
        if isinstance(err, HTTPException):
            return json_error(err.code or 500, err.description or err.name, "invalid_request_error")
        method, path = _current()
        if is_unavailable(err):  # down, restarting, or a lock not had in time: worth another try
            log.warning("the database could not serve %s %s, answered 503: %s", method, path, describe_failure(err))
            answer = (_answer(path, 503, DB_UNAVAILABLE) if is_management(path)
                      else json_error(503, DB_UNAVAILABLE, "new_api_error", "db_unavailable"))
            answer.headers["Retry-After"] = "1"
            return answer
        log.exception("unhandled error on %s %s", method, path)
        if is_management(path):
            return _answer(path, 500, "internal error")
        return json_error(500, "internal error", "new_api_error", "internal_error")

    @app.errorhandler(GatewayError)
    async def _gateway_error(err: GatewayError) -> Response:
        return json_error(err.status, err.message, err.type, err.code)


def _current() -> tuple[str, str]:
    if has_websocket_context():
        return "WEBSOCKET", websocket.path
    return request.method, request.path


def _claimant(claimants: list[InboundFormat], path: str) -> InboundFormat | None:
    """The format whose clients call ``path`` (see the module docstring), None for OpenAI's."""
    if is_management(path):
        return None
    for fmt in claimants:
        if fmt.claims_path(path):
            return fmt
    if not path.startswith(SHARED_PREFIX) or not claimants:
        return None
    inbound = _inbound()
    return next((fmt for fmt in claimants if fmt.claims_model_list(inbound)), None)


def _inbound() -> InboundRequest:
    """The request's headers and query, for a format to recognise its client by them."""
    current = websocket if has_websocket_context() else request
    method = "WEBSOCKET" if has_websocket_context() else request.method
    return InboundRequest(method=method, path=current.path, route=Route(method, current.path, kind="unknown"),
                          path_params={}, query=current.args, headers=current.headers,  # type: ignore[arg-type]
                          client_ip=current.remote_addr or "", read_body=_no_body)


async def _no_body() -> bytes:
    return b""


def _in_format(fmt: InboundFormat, status: int, message: str) -> Response:
    err = GatewayError(status, message, type="invalid_request_error", code="not_found")
    status, body = fmt.render_error(err, request_id_var.get() or new_request_id())
    return Response(body, status=status, content_type="application/json")


def _answer(path: str, status: int, message: str) -> Response:
    """The management API's ``{success, message}`` envelope under ``/api``, the OpenAI error elsewhere:
    a script reading ``success`` must not meet an OpenAI-shaped body."""
    if is_management(path):
        return Response(jsonutil.dumps({"success": False, "message": message}), status=status,
                        content_type="application/json")
    return json_error(status, message, "invalid_request_error")


def json_error(status: int, message: str, type_: str, code: str | None = None) -> Response:
    return Response(error_body(message, type_, code), status=status, content_type="application/json")


def error_body(message: str, type_: str, code: str | None = None) -> bytes:
    """OpenAI's error object, the body of :func:`json_error`."""
    return jsonutil.dumps({"error": {"message": message, "type": type_, "param": "", "code": code}})
