"""``/healthz`` and ``/readyz`` (operations issue): alive is alive; ready means the
database answers, every shipped migration is applied and the change feed is current, and a
failing check is named without the database's own words."""

from __future__ import annotations

import time

import httpx
import pytest

from faregate.db import storage
from faregate.testing.harness import GatewayServer


async def _get(server: GatewayServer, path: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        return await http.get(path)


async def test_a_started_gateway_is_alive_and_ready(gateway: GatewayServer) -> None:
    alive = await _get(gateway, "/healthz")
    assert alive.status_code == 200 and alive.json() == {"status": "ok"}
    ready = await _get(gateway, "/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json() == {"status": "ready",
                            "checks": {"database": "ok", "migrations": "ok", "change_feed": "ok"}}
    assert ready.headers["Cache-Control"] == "no-store"


async def test_a_missing_migration_is_not_ready(gateway: GatewayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = storage.shipped_migrations()
    monkeypatch.setattr(storage, "shipped_migrations", lambda: [*shipped, "9999_from_newer_code"])
    resp = await _get(gateway, "/readyz")
    assert resp.status_code == 503 and resp.json()["checks"]["migrations"] == "pending"


async def test_a_stale_change_feed_is_not_ready(gateway: GatewayServer) -> None:
    feed = gateway.gateway.feed
    feed.synced_at = time.monotonic() - 3 * feed.sync_interval - 10
    resp = await _get(gateway, "/readyz")
    assert resp.status_code == 503 and resp.json()["checks"]["change_feed"] == "stale"


async def test_an_unreachable_database_is_named_not_quoted(gateway: GatewayServer,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from faregate.edge import health

    class Down:
        async def execute_query(self, sql: str) -> None:
            raise OSError("connection to db.internal:3306 as fg:s3cret refused")

    monkeypatch.setattr(health.connections, "get", lambda name: Down())
    resp = await _get(gateway, "/readyz")
    assert resp.status_code == 503
    assert resp.json()["checks"]["database"] == "unreachable"
    assert "s3cret" not in resp.text and "db.internal" not in resp.text
    assert (await _get(gateway, "/healthz")).status_code == 200  # alive all the same
