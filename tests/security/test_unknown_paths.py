"""Unknown paths answer in the envelope their client reads (issue 8, #14): a management
script checks ``success``; an OpenAI SDK reads ``error``; an Anthropic or Google client, under
its vendor's prefix or by its headers on a shared ``/v1/`` path, its vendor's error."""

from __future__ import annotations

import anthropic
import httpx
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from faregate.testing.harness import GatewayServer
from faregate_adapter_gemini.testing.schema import validate_error as validate_gemini_error


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


# ---- a vendor's prefix answers in that vendor's shape (issue 28, item 10) --------------------
# An Anthropic or Google SDK that calls a path the gateway does not serve must read a 404 it
# understands (its NotFoundError), not an OpenAI body its error parser cannot read.


async def test_unknown_path_under_anthropics_prefix_answers_as_anthropic(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        for method, path in (("POST", "/v1/messages/batches"), ("GET", "/v1/messages/batches/msgbatch_1"),
                             ("GET", "/v1/messages")):
            resp = await http.request(method, path, json={} if method == "POST" else None,
                                      headers={"x-api-key": "sk-x", "anthropic-version": "2023-06-01"})
            assert resp.status_code == 404, (method, path)
            body = resp.json()
            assert body["type"] == "error" and body["error"]["type"] == "not_found_error", body
            assert path in body["error"]["message"]


async def test_the_anthropic_sdk_reads_an_unknown_path_as_not_found(gateway: GatewayServer) -> None:
    async with anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key="sk-x", max_retries=0) as client:
        with pytest.raises(anthropic.NotFoundError) as caught:
            await client.messages.batches.create(requests=[{"custom_id": "a", "params": {
                "model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}}])
    assert caught.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]


async def test_unknown_path_under_googles_prefix_answers_as_google(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        for method, path in (("POST", "/v1beta/cachedContents"), ("GET", "/v1beta/files"),
                             ("POST", "/upload/v1beta/files")):
            resp = await http.request(method, path, json={} if method == "POST" else None,
                                      headers={"x-goog-api-key": "sk-x"})
            assert resp.status_code == 404, (method, path)
            error = validate_gemini_error(resp.json())["error"]
            assert (error["code"], error["status"]) == (404, "NOT_FOUND") and path in error["message"]


async def test_the_google_sdk_reads_an_unknown_path_as_not_found(gateway: GatewayServer) -> None:
    client = genai.Client(api_key="sk-x", http_options=types.HttpOptions(base_url=gateway.base_url,
                                                                           api_version="v1beta"))
    try:
        with pytest.raises(genai_errors.ClientError) as caught:
            await client.aio.caches.create(model="gemini-2.5-flash", config=types.CreateCachedContentConfig(
                contents=[types.Content(role="user", parts=[types.Part(text="hi")])]))
        assert (caught.value.code, caught.value.status) == (404, "NOT_FOUND")
    finally:
        await client.aio.aclose()
        client.close()


async def test_a_shared_v1_path_answers_in_the_shape_the_clients_headers_speak(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        anthropic_shape = await http.post("/v1/no-such-thing", json={}, headers={"anthropic-version": "2023-06-01"})
        assert anthropic_shape.json()["error"]["type"] == "not_found_error"
        google_shape = await http.post("/v1/no-such-thing", json={}, headers={"x-goog-api-key": "k"})
        assert google_shape.json()["error"]["status"] == "NOT_FOUND"
        openai_shape = await http.post("/v1/no-such-thing", json={}, headers={"authorization": "Bearer k"})
        assert openai_shape.status_code == 404
        assert openai_shape.json()["error"]["type"] == "invalid_request_error"
        assert all(r.status_code == 404 for r in (anthropic_shape, google_shape))
