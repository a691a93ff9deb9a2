"""``GET /api/channel/types`` (admin): the channel types the installed provider plugins
serve, each with its name, provider, default base URL and endpoint kinds (the console's
type choice when a channel is added); documented in the OpenAPI document."""

from __future__ import annotations

import httpx

from faregate.testing.harness import AdminClient, GatewayServer


async def test_lists_the_installed_types_with_their_names_and_endpoints(gateway: GatewayServer,
                                                                        admin: AdminClient) -> None:
    types = await admin.ok("GET", "/api/channel/types")
    by_type = {t["type"]: t for t in types}
    assert [t["type"] for t in types] == sorted(by_type), "one row per type, by number"
    assert by_type[1] == {"type": 1, "name": "openai", "provider": "openai",
                          "default_base_url": "https://api.openai.com",
                          "endpoints": sorted(by_type[1]["endpoints"])}
    assert {"chat", "embeddings", "images", "responses"} <= set(by_type[1]["endpoints"])
    # a vendor of the OpenAI provider is named and placed by its own row, and serves only its kinds
    assert (by_type[25]["name"], by_type[25]["provider"]) == ("moonshot", "openai")
    assert by_type[25]["default_base_url"] == "https://api.moonshot.cn" and by_type[25]["endpoints"] == ["chat"]
    assert by_type[8]["default_base_url"] == "", "custom: every channel gives its URL"
    # every type any installed plugin serves is listed, named after a provider by default
    assert set(by_type) == set(gateway.gateway.providers)
    for kind, provider in gateway.gateway.providers.items():
        assert by_type[kind]["provider"] == provider.name and by_type[kind]["endpoints"], kind


async def test_only_admins_see_it_and_it_is_documented(gateway: GatewayServer, admin: AdminClient) -> None:
    spec = await admin.call("GET", "/api/openapi.json")
    assert "/api/channel/types" in spec["paths"]
    async with httpx.AsyncClient(base_url=gateway.base_url) as anonymous:
        resp = await anonymous.get("/api/channel/types")
    assert resp.status_code == 401 and resp.json()["success"] is False
