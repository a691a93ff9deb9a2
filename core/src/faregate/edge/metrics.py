"""``GET /metrics``: the Prometheus scrape of :class:`faregate.observe.metrics.Metrics`
(when ``metrics_enabled``), behind the optional ``metrics_token`` bearer."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST
from quart import Quart, Response, request

from faregate.observe.metrics import Metrics

if TYPE_CHECKING:
    from faregate.exchange.host import ExchangeHost


def _authorized(token: str, header: str | None) -> bool:
    scheme, _, given = (header or "").partition(" ")
    ok = hmac.compare_digest(given.strip().encode(), token.encode())
    return ok and scheme.lower() == "bearer"


def install(app: Quart, gateway: ExchangeHost) -> None:
    """Add ``GET /metrics`` and the metrics observer (when ``metrics_enabled``)."""
    if not gateway.settings.metrics_enabled:
        return
    metrics = Metrics(gateway)
    gateway.observers.append(metrics.observe)
    token = str(gateway.settings.metrics_token or "")

    @app.get("/metrics")
    async def prometheus_metrics() -> Response:
        if token and not _authorized(token, request.headers.get("Authorization")):
            return Response("unauthorized\n", status=401, content_type="text/plain; charset=utf-8",
                            headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
        body = await metrics.scrape()
        return Response(body, status=200, content_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})

    if metrics.multiprocess_dir is None:
        return
    refresher: list[asyncio.Task[None]] = []

    @app.before_serving
    async def _start_refresh() -> None:
        refresher.append(asyncio.create_task(metrics.refresh_loop(), name="metrics-refresh"))

    @app.after_serving
    async def _stop_refresh() -> None:
        for task in refresher:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        refresher.clear()
        metrics.fold()  # the last second's counts into the shared files, for the other workers' scrapes
