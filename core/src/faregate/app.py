"""The application factory: one Quart app per worker, with the plugin set chosen by
``FAREGATE_PLUGINS`` / ``FAREGATE_DISABLED_PLUGINS`` (or given explicitly)."""

from __future__ import annotations

import logging
from typing import Any

from quart import Quart, Response, request
from quart.sessions import SecureCookieSession, SecureCookieSessionInterface
from werkzeug.exceptions import HTTPException

from faregate import jsonutil
from faregate.contracts import InboundFormat
from faregate.errors import GatewayError
from faregate.gateway import Gateway
from faregate.management import register_management
from faregate.plugins import PluginSet, load_plugins
from faregate.relay.models import model_list_handlers
from faregate.relay.pipeline import Relay
from faregate.security import redact

log = logging.getLogger("faregate")


def create_app(plugins: PluginSet | None = None, settings: dict[str, Any] | None = None) -> Quart:
    plugins = plugins or load_plugins()
    gateway = Gateway(plugins, settings)
    app = Quart("faregate")
    app.faregate = gateway  # type: ignore[attr-defined]
    app.secret_key = gateway.session_secret
    app.session_interface = _LazyCookieSessions()
    app.config.update(
        MAX_CONTENT_LENGTH=int(gateway.settings.max_body_mb * 1024 * 1024),
        SESSION_COOKIE_NAME="session",
        SESSION_COOKIE_SAMESITE="Strict",
        SESSION_COOKIE_HTTPONLY=True,
        PERMANENT_SESSION_LIFETIME=30 * 24 * 3600,
        BODY_TIMEOUT=120,
        # None: Quart then sends without wrapping each response in a wait_for task (its
        # default 60 s would also cut streams); answers here are small or are streams
        RESPONSE_TIMEOUT=None,
    )
    redact.install()
    relay = Relay(gateway)
    gateway.relay = relay  # type: ignore[attr-defined]

    for fmt in gateway.formats.values():
        for route in fmt.routes():
            app.add_url_rule(route.path, endpoint=f"relay:{fmt.name}:{route.path}",
                             view_func=_relay_view(relay, fmt), methods=[route.method])
    list_models, get_model = model_list_handlers(gateway, relay)
    if gateway.formats:
        app.add_url_rule("/v1/models", endpoint="models:list", view_func=list_models, methods=["GET"])
        app.add_url_rule("/v1/models/<path:model>", endpoint="models:get", view_func=get_model, methods=["GET"])
    register_management(app, gateway)
    for blueprint, prefix in gateway.hooks.routes():
        app.register_blueprint(blueprint, url_prefix=prefix)

    @app.before_serving
    async def _start() -> None:
        await gateway.start(app)

    @app.after_serving
    async def _stop() -> None:
        await gateway.stop(app)

    @app.errorhandler(404)
    async def _not_found(_: Exception) -> Response:
        return _json_error(404, f"Invalid URL ({request.method} {request.path})", "invalid_request_error")

    @app.errorhandler(405)
    async def _not_allowed(_: Exception) -> Response:
        return _json_error(405, f"Method not allowed ({request.method} {request.path})", "invalid_request_error")

    @app.errorhandler(413)
    async def _too_large(_: Exception) -> Response:
        err = GatewayError(413, "request body too large", type="invalid_request_error", code="request_too_large")
        rule = request.url_rule
        endpoint = rule.endpoint if rule is not None else ""
        if endpoint.startswith("relay:"):  # answer in the shape the client's format uses
            fmt = gateway.formats.get(endpoint.split(":", 2)[1])
            if fmt is not None:
                status, body = fmt.render_error(err, "-")
                return Response(body, status=status, content_type="application/json")
        return _json_error(413, err.message, err.type, err.code)

    @app.errorhandler(Exception)
    async def _unexpected(err: Exception) -> Response:
        if isinstance(err, HTTPException):
            return _json_error(err.code or 500, err.description or err.name, "invalid_request_error")
        log.exception("unhandled error on %s %s", request.method, request.path)
        if request.path.startswith("/api/"):
            return Response(jsonutil.dumps({"success": False, "message": "internal error"}), status=500,
                            content_type="application/json")
        return _json_error(500, "internal error", "new_api_error", "internal_error")

    @app.errorhandler(GatewayError)
    async def _gateway_error(err: GatewayError) -> Response:
        return _json_error(err.status, err.message, err.type, err.code)

    return app


class _LazyCookieSessions(SecureCookieSessionInterface):
    """Quart builds a signing serializer for every request; relay requests carry no
    session cookie, so give them an empty session without one."""

    async def open_session(self, app: Quart, request: Any) -> SecureCookieSession | None:
        if self.get_cookie_name(app) not in request.cookies:
            return self.session_class()
        return await super().open_session(app, request)


def _relay_view(relay: Relay, fmt: InboundFormat) -> Any:
    async def view(**_: Any) -> Response:
        return await relay.handle(fmt)

    view.__name__ = f"relay_{fmt.name.replace('.', '_')}"
    return view


def _json_error(status: int, message: str, type_: str, code: str | None = None) -> Response:
    body = {"error": {"message": message, "type": type_, "param": "", "code": code}}
    return Response(jsonutil.dumps(body), status=status, content_type="application/json")
