"""The management API describes itself (issue 10): every /api route is in the OpenAPI
document, declared bodies are validated on the way in (400 in the envelope naming each
field), and the document carries their schemas."""

from __future__ import annotations

import re

import httpx

from faregate.testing.harness import AdminClient, GatewayServer

PARAM = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")


async def test_every_management_route_is_documented(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        doc = (await http.get("/api/openapi.json")).json()
        assert (await http.get("/api/docs")).status_code == 200
    assert doc["openapi"].startswith("3.1") and doc["info"]["title"] == "Faregate management API"
    missing = []
    for rule in gateway.app.url_map.iter_rules():
        if not rule.rule.startswith("/api/") or rule.rule in ("/api/openapi.json", "/api/docs"):
            continue
        path = PARAM.sub(r"{\1}", rule.rule)
        for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}:
            if method.lower() not in doc["paths"].get(path, {}):
                missing.append(f"{method} {path}")
    assert missing == []
    assert not any(p.startswith("/v1") for p in doc["paths"]), "the relay is described by the vendors' documents"


async def test_declared_bodies_are_checked_and_described(gateway: GatewayServer, admin: AdminClient) -> None:
    resp = await admin.http.post("/api/redemption/", json={"name": "x", "quota": "5", "colour": "red"},
                                 headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400
    body = resp.json()
    assert body["success"] is False and "quota" in body["message"] and "colour" in body["message"]
    doc = (await admin.http.get("/api/openapi.json")).json()
    operation = doc["paths"]["/api/redemption/"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["title"] == "RedemptionCreate" and schema["additionalProperties"] is False
    assert schema["properties"]["quota"]["maximum"] == 2**53 and "quota" in schema["required"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["title"] == "Keys"
