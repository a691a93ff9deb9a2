"""Unknown paths answer in the envelope their client reads (issue 8, #14): a management
script checks ``success``; an OpenAI SDK reads ``error``."""

from __future__ import annotations

import httpx

from faregate.testing.harness import GatewayServer


async def test_unknown_management_path_answers_404_in_the_envelope(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.get("/api/no-such-thing")
        assert resp.status_code == 404
        body = resp.json()
        assert body["success"] is False and "/api/no-such-thing" in body["message"]
        wrong_method = await http.delete("/api/status")
        assert wrong_method.status_code == 405 and wrong_method.json()["success"] is False


async def test_unknown_relay_path_answers_404_as_openai(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post("/v1/no-such-thing", json={})
        assert resp.status_code == 404
        assert resp.json()["error"]["type"] == "invalid_request_error"
