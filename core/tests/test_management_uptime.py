"""GET /api/uptime/status (public): Uptime Kuma status pages proxied per configured group,
answered from a short cache (no traffic amplification), a group whose Kuma cannot be read
answered empty with an error instead of failing the whole answer (the option is checked:
test_management_uptime_refused.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx
import orjson
import pytest

from faregate.management import uptime
from faregate.testing.fake_server import FakeServer, Request, Response
from faregate.testing.harness import AdminClient, GatewayServer, free_port

STATUS_PAGE = {"config": {"slug": "main"}, "publicGroupList": [
    {"id": 1, "name": "APIs", "monitorList": [{"id": 7, "name": "Chat API"}, {"id": 8, "name": "Embeddings"}]},
    {"id": 2, "name": "Web", "monitorList": [{"id": 9, "name": "Console"}, "junk"]},
]}
HEARTBEATS = {
    # oldest first, as Kuma lists them: the last beat is the state now
    "heartbeatList": {"7": [{"status": 0, "time": "2024-01-01 00:00"}, {"status": 1, "time": "2024-01-01 00:01"}],
                      "8": [{"status": 1}, {"status": 0}], "9": []},
    "uptimeList": {"7_24": 0.995, "8_24": 0.5, "9_24": "nan"},
}


class FakeKuma(FakeServer):
    async def answer(self, request: Request, response: Response) -> None:
        if request.path == "/api/status-page/main":
            return await response.reply(200, orjson.dumps(STATUS_PAGE))
        if request.path == "/api/status-page/heartbeat/main":
            return await response.reply(200, orjson.dumps(HEARTBEATS))
        if request.path.endswith("/garbled"):
            return await response.reply(200, b"<html>SECRET-KUMA-TEXT</html>")
        return response.send(404, b'{"msg": "SECRET-KUMA-TEXT"}')


def _public(gateway: GatewayServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=gateway.base_url, timeout=30)


async def test_groups_are_proxied_and_a_dead_kuma_fails_alone(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeKuma() as kuma, _public(gateway) as anonymous:
        assert (await anonymous.get("/api/uptime/status")).json() == {"success": True, "message": "", "data": []}
        await admin.set_option("console_setting.uptime_kuma_groups", [
            {"categoryName": "Core", "url": kuma.base_url + "/", "slug": "main", "description": "ours"},
            {"categoryName": "Gone", "url": f"http://127.0.0.1:{free_port()}", "slug": "main"},
            {"categoryName": "Odd", "url": kuma.base_url, "slug": "garbled"},
            {"categoryName": "Missing", "url": kuma.base_url, "slug": "nope"},
        ])
        body = (await anonymous.get("/api/uptime/status")).json()
    assert body["success"] is True
    core, gone, odd, missing = body["data"]
    assert core == {"categoryName": "Core", "monitors": [
        {"name": "Chat API", "uptime": 0.995, "status": 1, "group": "APIs"},
        {"name": "Embeddings", "uptime": 0.5, "status": 0, "group": "APIs"},
        {"name": "Console", "uptime": 0.0, "status": 0, "group": "Web"}]}
    for group in (gone, odd, missing):
        assert group["monitors"] == [] and group["error"]
    assert [g["categoryName"] for g in body["data"]] == ["Core", "Gone", "Odd", "Missing"]
    text = orjson.dumps(body).decode()
    assert "SECRET" not in text and "127.0.0.1" not in text  # neither Kuma's text nor its address


async def test_answers_come_from_a_short_cache(gateway: GatewayServer, admin: AdminClient,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeKuma() as kuma, _public(gateway) as anonymous:
        await admin.set_option("console_setting.uptime_kuma_groups",
                               [{"categoryName": "Core", "url": kuma.base_url, "slug": "main"}])
        answers = await asyncio.gather(*(anonymous.get("/api/uptime/status") for _ in range(20)))
        answers.append(await anonymous.get("/api/uptime/status"))
        assert {len(a.json()["data"][0]["monitors"]) for a in answers} == {3}
        assert len(kuma.requests) == 2  # one status page and one heartbeat read for 21 callers
        # a changed option is read at once, not after the cache expires
        await admin.set_option("console_setting.uptime_kuma_groups",
                               [{"categoryName": "Renamed", "url": kuma.base_url, "slug": "main"}])
        assert (await anonymous.get("/api/uptime/status")).json()["data"][0]["categoryName"] == "Renamed"
        assert len(kuma.requests) == 4
        monkeypatch.setattr(uptime, "CACHE_SECONDS", 0.0)  # expired: read again
        await anonymous.get("/api/uptime/status")
        await anonymous.get("/api/uptime/status")
        assert len(kuma.requests) == 8


async def test_private_address_policy_applies(make_gateway: Callable[..., Awaitable[GatewayServer]]) -> None:
    server = await make_gateway(settings={"channel_private_addresses": "deny"})
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    async with FakeKuma() as kuma, _public(server) as anonymous:
        await admin.set_option("console_setting.uptime_kuma_groups",
                               [{"categoryName": "Core", "url": kuma.base_url, "slug": "main"}])
        (group,) = (await anonymous.get("/api/uptime/status")).json()["data"]
        assert group["monitors"] == [] and group["error"] and kuma.requests == []
    await admin.close()
