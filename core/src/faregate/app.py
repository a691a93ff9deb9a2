"""The application factory: one Quart app per worker, with the plugin set chosen by
``FAREGATE_PLUGINS`` / ``FAREGATE_DISABLED_PLUGINS`` (or given explicitly)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from quart import Quart, Response
from quart.sessions import SecureCookieSession, SecureCookieSessionInterface, SessionMixin
from quart.wrappers import BaseRequestWebsocket
from werkzeug.wrappers import Response as WerkzeugResponse

from faregate.accounts.sessions import SESSION_LIFETIME
from faregate.edge import errors, h11_writes, health, idle_timer, metrics, routes, steps
from faregate.edge.connection import EdgeHTTPConnection
from faregate.edge.direct_relay import DirectRelay
from faregate.edge.lazy_rules import LazyBuilderRule
from faregate.edge.proxies import TrustedProxies
from faregate.gateway import Gateway
from faregate.management import missing_methods, openapi, register_management
from faregate.plugins import PluginSet, load_plugins
from faregate.security import redact

#: handlers remembered by :meth:`FaregateApp.ensure_async` at most (bound methods are new
#: objects per access; the app's own functions are a few hundred)
MAX_KNOWN_HANDLERS = 4096


class FaregateApp(Quart):
    """The Quart app of one worker; ``faregate`` is its :class:`Gateway` (what
    ``current_app.faregate`` reads in management views and plugin routes)."""

    faregate: Gateway
    #: URL builders compiled on first use, not for each of the ~275 rules at start-up
    url_rule_class = LazyBuilderRule
    asgi_http_class = EdgeHTTPConnection
    #: the handlers found to be coroutine functions already (Quart asks per call: the view
    #: and every before/after-request hook, about ten ``inspect`` walks per request)
    _coroutine_functions: dict[Callable[..., Any], bool]

    def ensure_async(self, func: Callable[..., Any]) -> Callable[..., Any]:
        known = self.__dict__.setdefault("_coroutine_functions", {})
        if func in known:
            return func
        made = super().ensure_async(func)
        if made is func and len(known) < MAX_KNOWN_HANDLERS:
            known[func] = True
        return made


def create_app(plugins: PluginSet | None = None, settings: dict[str, Any] | None = None) -> FaregateApp:
    plugins = plugins or load_plugins()
    gateway = Gateway(plugins, settings)
    app = FaregateApp("faregate")
    app.faregate = gateway
    app.secret_key = gateway.session_secret
    app.session_interface = _LazyCookieSessions()
    app.config.update(
        MAX_CONTENT_LENGTH=int(gateway.settings.max_body_mb * 1024 * 1024),
        SESSION_COOKIE_NAME="session",
        # Lax: sent on top-level navigations back from OAuth providers and payment pages
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SECURE=bool(gateway.settings.secure_cookies),
        PERMANENT_SESSION_LIFETIME=SESSION_LIFETIME,
        BODY_TIMEOUT=gateway.settings.body_timeout,
        # None: Quart then sends without wrapping each response in a wait_for task (its
        # default 60 s would also cut streams); answers here are small or are streams
        RESPONSE_TIMEOUT=None,
    )
    redact.install()
    h11_writes.install()  # Hypercorn then writes an answer's head and body in one go
    idle_timer.install()  # and starts no keep-alive task per request
    routes.lenient_slashes(app)  # before any route: each takes the map's default
    relay_routes = routes.install(app, gateway)
    health.install(app, gateway)
    metrics.install(app, gateway)
    openapi.install(app)
    register_management(app, gateway)
    for blueprint, prefix in gateway.hooks.routes(gateway.services):
        app.register_blueprint(blueprint, url_prefix=prefix)
    missing_methods.install(app)  # new-api's sign-in routes whose plugin is absent say so
    errors.install(app, gateway.formats)
    # one hook before every view (global limits, the management body cap: before any body is
    # read; request ids) and one after (keep-alive, every HTML answer's CSP, request id headers)
    steps.install(app, gateway)
    # the relay's HTTP routes, served without Quart's per-request machinery (when no app-wide
    # hook needs it); the outermost layer: the client address and request id every view sees
    served = DirectRelay(app, app.asgi_app, gateway, relay_routes)
    app.asgi_app = TrustedProxies(served, gateway.settings.trusted_proxies)  # type: ignore[method-assign,assignment]

    @app.before_serving
    async def _start() -> None:
        await gateway.start(app)

    @app.after_serving
    async def _stop() -> None:
        await gateway.stop(app)

    return app


class _LazyCookieSessions(SecureCookieSessionInterface):
    """Quart builds a signing serializer for every request; relay requests carry no
    session cookie, so give them an empty session without one."""

    async def open_session(self, app: Quart, request: BaseRequestWebsocket) -> SecureCookieSession | None:
        if "cookie" not in request.headers or self.get_cookie_name(app) not in request.cookies:
            return self.session_class()  # a relay request's: no cookie parsed, nothing signed
        return await super().open_session(app, request)

    async def save_session(self, app: Quart, session: SessionMixin, response: Response | WerkzeugResponse | None
                           ) -> None:
        if not (session or session.modified or session.accessed):
            return  # nothing to write (a relay request's): not seven cookie settings read first
        await super().save_session(app, session, response)
