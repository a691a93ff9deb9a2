"""Health for load balancers and orchestrators: ``GET /healthz`` says the process answers
(no I/O at all); ``GET /readyz`` says this worker can serve: its database answers, every
migration the installed code ships is applied, and its change feed is current. Cheap
enough to poll every second: one ``SELECT 1``, the migration list only until it first
matched. A failing check answers 503 naming the check, never the database's own words
(they may carry its address or user)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from quart import Quart, Response
from tortoise import connections

from faregate import jsonutil
from faregate.db import storage

if TYPE_CHECKING:
    from faregate.exchange.host import ExchangeHost

log = logging.getLogger("faregate.health")

#: a database that takes longer than this to answer ``SELECT 1`` is not ready
DB_TIMEOUT = 2.0


def _answer(status: int, body: dict[str, object]) -> Response:
    response = Response(jsonutil.dumps(body), status=status, content_type="application/json")
    response.headers["Cache-Control"] = "no-store"
    return response


class Readiness:
    def __init__(self, gateway: ExchangeHost) -> None:
        self.gateway = gateway
        self.migrated = False  # applied migrations never disappear: checked until they match

    async def checks(self) -> dict[str, str]:
        results = {"database": "ok", "migrations": "ok", "change_feed": "ok"}
        try:
            async with asyncio.timeout(DB_TIMEOUT):
                await connections.get("default").execute_query("SELECT 1")
                if not self.migrated:
                    self.migrated = await self._migrations_applied()
        except Exception as exc:  # any failure to answer is "not ready"; the cause goes to the log
            log.warning("readiness: the database did not answer (%s)", type(exc).__name__)
            results["database"] = "unreachable"
        if not self.migrated:
            results["migrations"] = "pending" if results["database"] == "ok" else "unknown"
        feed = getattr(self.gateway, "feed", None)
        if feed is None or not feed.current():
            results["change_feed"] = "stale"
        return results

    async def _migrations_applied(self) -> bool:
        applied = set(await storage.applied_migrations())
        return all(name in applied for name in storage.shipped_migrations())


def install(app: Quart, gateway: ExchangeHost) -> None:
    readiness = Readiness(gateway)

    @app.get("/healthz")
    async def healthz() -> Response:
        return _answer(200, {"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> Response:
        checks = await readiness.checks()
        ready = all(value == "ok" for value in checks.values())
        return _answer(200 if ready else 503, {"status": "ready" if ready else "not ready", "checks": checks})
