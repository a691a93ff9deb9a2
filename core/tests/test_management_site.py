"""The site's public pages and figures (issue 10, system): pages from options, pricing for
the caller's usable groups, ratio config only when exposed, groups, database status."""

from __future__ import annotations

import httpx

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI


async def test_pages_come_from_options(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.set_option("Notice", "**maintenance** at noon")
    await admin.set_option("PrivacyPolicy", "we keep logs 30 days")
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        assert (await http.get("/api/notice")).json()["data"] == "**maintenance** at noon"
        assert (await http.get("/api/privacy-policy")).json()["data"] == "we keep logs 30 days"
        assert (await http.get("/api/about")).json() == {"success": True, "message": "", "data": ""}


async def test_pricing_shows_what_the_caller_may_use(gateway: GatewayServer, admin: AdminClient,
                                                     fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o")
    await admin.add_channel(base_url=fake_openai.base_url, models="o3-mini", group="svip")
    await admin.set_option("ModelPrice", {"gpt-4o": 0.01})
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        body = (await http.get("/api/pricing")).json()
    assert body["success"] and [d["model_name"] for d in body["data"]] == ["gpt-4o"]
    assert body["data"][0]["quota_type"] == 1 and body["data"][0]["model_price"] == 0.01
    assert body["group_ratio"] == {"default": 1.0}
    assert body["vendors"] == [] and "vendor_id" not in body["data"][0]


async def test_pricing_carries_the_models_metadata_and_vendors(gateway: GatewayServer, admin: AdminClient,
                                                               fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o,gpt-4o-mini,o3-mini")
    vendor = await admin.ok("POST", "/api/vendors/", json={"name": "OpenAI", "description": "the makers"})
    hidden = await admin.ok("POST", "/api/vendors/", json={"name": "Hidden", "status": 0})
    await admin.ok("POST", "/api/models/", json={"model_name": "gpt-4o", "vendor_id": vendor["id"],
                                                 "description": "exact row", "tags": "chat"})
    await admin.ok("POST", "/api/models/", json={"model_name": "gpt-", "name_rule": 1, "vendor_id": vendor["id"],
                                                 "description": "prefix rule"})
    await admin.ok("POST", "/api/models/", json={"model_name": "o3-mini", "vendor_id": hidden["id"]})
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        body = (await http.get("/api/pricing")).json()
    items = {d["model_name"]: d for d in body["data"]}
    assert items["gpt-4o"]["description"] == "exact row" and items["gpt-4o"]["owner_by"] == "OpenAI"
    assert items["gpt-4o-mini"]["description"] == "prefix rule" and items["gpt-4o-mini"]["vendor_id"] == vendor["id"]
    assert items["o3-mini"]["vendor_id"] == 0 and items["o3-mini"]["owner_by"] == ""  # its vendor is disabled
    assert body["vendors"] == [{"id": vendor["id"], "name": "OpenAI", "description": "the makers", "icon": ""}]


async def test_ratio_config_groups_and_status(gateway: GatewayServer, admin: AdminClient) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        assert (await http.get("/api/ratio_config")).status_code == 403
        await admin.set_option("ExposeRatioEnabled", True)
        exposed = (await http.get("/api/ratio_config")).json()
        assert exposed["success"] and "gpt-4o" in exposed["data"]["model_ratio"]
        assert (await http.get("/api/group/")).status_code == 401  # admins only
    assert await admin.ok("GET", "/api/group/") == ["default", "svip", "vip"]
    assert (await admin.ok("GET", "/api/status/test"))["database_ms"] >= 0
