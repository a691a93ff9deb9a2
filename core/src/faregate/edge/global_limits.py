"""new-api's global rate limits per client IP: ``GLOBAL_API_RATE_LIMIT`` on the management
API (``/api/…``) and ``GLOBAL_WEB_RATE_LIMIT`` on the console's pages, each ``N`` requests per
``…_DURATION`` seconds (new-api's defaults: 180 per 180 s and 60 per 180 s), on while
``…_ENABLE``. They count with the same machinery as ``CRITICAL_RATE_LIMIT`` (the login
throttle's rate limits: this worker's memory, or Redis when ``FAREGATE_REDIS_URL`` is set),
in counters of their own.

The relay routes are not counted here: their callers have the model request rate limit and
the per-key limits (:mod:`faregate.limits`). The web limit counts pages, not files (a path
whose last segment has no dot): a console page loads a dozen versioned files the browser
caches, which new-api, whose console is one bundle, never had to tell apart."""

from __future__ import annotations

from typing import TYPE_CHECKING

from quart import Response
from quart.wrappers import Request

from faregate.edge.routes import is_management
from faregate.management.common import too_many
from faregate.management.users import login_throttle

if TYPE_CHECKING:
    from faregate.settings import Settings

#: the counters' names (apart from sign-ups' and failed logins')
API, WEB = "global-api", "global-web"
#: never counted: probes of load balancers and scrapers, which must not lock a node out
UNCOUNTED = frozenset({"/healthz", "/readyz", "/metrics"})
EXCHANGE_ENDPOINT = "exchange:"


def enabled(settings: Settings) -> bool:
    """Whether either limit is on (at start: off, the edge does not look at all)."""
    return bool(settings.global_api_rate_limit_enable or settings.global_web_rate_limit_enable)


def which(settings: Settings, request: Request) -> tuple[str, int, float] | None:
    """The global limit this request counts against: its name, limit and window."""
    path = request.path
    if is_management(path):
        if not settings.global_api_rate_limit_enable:
            return None
        return API, int(settings.global_api_rate_limit), float(settings.global_api_rate_limit_duration)
    if request.method not in ("GET", "HEAD") or path in UNCOUNTED or "." in path.rsplit("/", 1)[-1]:
        return None
    rule = request.url_rule
    if rule is None or (rule.endpoint or "").startswith(EXCHANGE_ENDPOINT) or not settings.global_web_rate_limit_enable:
        return None  # a 404 or a relay route (a model list): not a page
    return WEB, int(settings.global_web_rate_limit), float(settings.global_web_rate_limit_duration)


async def count(limit: tuple[str, int, float], request: Request) -> Response | None:
    """Count the request against ``limit`` (from :func:`which`): None while under it, else the 429."""
    name, most, window = limit
    throttle = login_throttle()
    wait = await throttle.limit(name, f"ip:{throttle.client_key(request.remote_addr or '')}", most, window)
    if wait is None:
        return None
    if name == API:
        return too_many("requests", wait)
    return Response("too many requests", status=429, headers={"Retry-After": str(int(wait))},
                    content_type="text/plain; charset=utf-8")
