"""Request bodies are capped per route before they are read, and refused in the route's
own format (issue 8, #12); big-but-allowed inputs are estimated off the event loop.

The oversized requests below are sent with their body left unfinished: only a server
that answers without reading the whole body can reply at all."""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from urllib.parse import urlsplit

import h11
import httpx
import pytest

from faregate import jsonutil
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.tokens import TokenEstimator

ANTHROPIC = {"anthropic-version": "2023-06-01"}
COUNT_TOKENS = "/v1/messages/count_tokens"
MIB = 1024 * 1024
ANSWER_DEADLINE = 15  # seconds; a hang (waiting for the rest of the body) fails the test


async def unfinished_request(base_url: str, path: str, headers: dict[str, str], sent: bytes,
                             *, chunk: int = 64 * 1024) -> tuple[int, dict[str, str], Any]:
    """POST ``sent`` as the start of a body that never ends (a declared Content-Length
    that is not reached, or a chunked body without its last chunk); the response. JSON unless
    ``headers`` name another Content-Type."""
    url = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    conn = h11.Connection(h11.CLIENT)
    try:
        head = [("Host", url.netloc), *{"Content-Type": "application/json", **headers}.items()]
        writer.write(conn.send(h11.Request(method="POST", target=path, headers=head)))
        for start in range(0, len(sent), chunk):
            writer.write(conn.send(h11.Data(data=sent[start:start + chunk])))
            try:
                await writer.drain()
            except ConnectionError:  # the server answered and closed while we were sending
                break
        async with asyncio.timeout(ANSWER_DEADLINE):
            response: h11.Response | None = None
            body = b""
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await reader.read(65536))
                elif isinstance(event, h11.Response):
                    response = event
                elif isinstance(event, h11.Data):
                    body += bytes(event.data)
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    break
        assert response is not None
        return (response.status_code, {k.decode().lower(): v.decode() for k, v in response.headers},
                jsonutil.loads(body))
    finally:
        writer.close()


async def _gateway_with_key(make_gateway: Any, settings: dict[str, Any] | None = None
                            ) -> tuple[GatewayServer, AdminClient, str]:
    gw: GatewayServer = await make_gateway(settings=settings)
    if "anthropic.messages" not in gw.gateway.formats:
        pytest.skip("the Anthropic format is not installed")
    admin = AdminClient(gw.base_url)
    await admin.setup_root()
    return gw, admin, await admin.add_token()


async def test_declared_oversized_count_tokens_body_is_refused_before_it_is_read(make_gateway: Any) -> None:
    gw, admin, key = await _gateway_with_key(make_gateway)
    headers = {"x-api-key": key, **ANTHROPIC, "Content-Length": str(100 * MIB)}  # the size, under max_body_mb
    status, _, body = await unfinished_request(gw.base_url, COUNT_TOKENS, headers, b'{"model": "claude", "messa')
    assert status == 413
    assert body["type"] == "error" and body["error"]["type"] == "request_too_large"
    await admin.close()


async def test_chunked_oversized_count_tokens_body_is_cut_off(make_gateway: Any) -> None:
    gw, admin, key = await _gateway_with_key(make_gateway, {"count_tokens_max_body_mb": 0.5})
    headers = {"x-api-key": key, **ANTHROPIC, "Transfer-Encoding": "chunked"}
    status, _, body = await unfinished_request(gw.base_url, COUNT_TOKENS, headers, b" " * MIB)
    assert status == 413 and body["error"]["type"] == "request_too_large"
    await admin.close()


async def test_chunked_oversized_chat_body_is_cut_off_in_openai_shape(make_gateway: Any) -> None:
    gw, admin, key = await _gateway_with_key(make_gateway, {"max_body_mb": 0.5})
    headers = {"Authorization": f"Bearer {key}", "Transfer-Encoding": "chunked"}
    status, _, body = await unfinished_request(gw.base_url, "/v1/chat/completions", headers, b" " * MIB)
    assert status == 413 and body["error"]["code"] == "request_too_large"
    await admin.close()


async def test_management_api_has_its_own_smaller_cap_in_its_envelope(make_gateway: Any) -> None:
    gw, admin, key = await _gateway_with_key(make_gateway)
    assert gw.gateway.settings.management_max_body_mb < gw.gateway.settings.max_body_mb
    declared = {"Content-Length": str(3 * MIB)}  # under the relay's cap, over the management API's
    status, _, body = await unfinished_request(gw.base_url, "/api/user/login", declared, b'{"username": "ro')
    assert status == 413 and body["success"] is False and "too large" in body["message"]
    chunked = {"Transfer-Encoding": "chunked"}
    status, _, body = await unfinished_request(gw.base_url, "/api/token/", chunked, b" " * 3 * MIB)
    assert status == 413 and body["success"] is False
    await admin.close()


async def test_small_chunked_management_body_still_reaches_the_view(make_gateway: Any) -> None:
    gw, admin, _ = await _gateway_with_key(make_gateway)

    async def chunks() -> Any:  # httpx sends an async iterable without a length as chunked
        yield b'{"username": "root", '
        yield b'"password": "faregate-test-pw"}'

    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        resp = await http.post("/api/user/login", content=chunks())
    assert resp.status_code == 200 and resp.json()["success"] is True, resp.text
    await admin.close()


async def test_big_count_tokens_input_is_estimated_in_a_worker_thread(make_gateway: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    gw, admin, key = await _gateway_with_key(make_gateway)
    loop_thread = threading.get_ident()
    seen: list[int] = []
    text = TokenEstimator.text

    def recording_text(self: TokenEstimator, value: str) -> int:
        seen.append(threading.get_ident())
        return text(self, value)

    monkeypatch.setattr(TokenEstimator, "text", recording_text)
    threshold = int(gw.gateway.settings.offload_body_kb * 1024)
    big = {"model": "claude", "messages": [{"role": "user", "content": "word " * (threshold // 5 + 1000)}]}
    small = {"model": "claude", "messages": [{"role": "user", "content": "hello"}]}
    headers = {"x-api-key": key, **ANTHROPIC}
    async with httpx.AsyncClient(base_url=gw.base_url, headers=headers, timeout=60) as http:
        big_resp, small_resp = await asyncio.gather(http.post(COUNT_TOKENS, json=big),
                                                    http.post(COUNT_TOKENS, json=small))
    assert big_resp.status_code == 200 and small_resp.status_code == 200
    assert big_resp.json()["input_tokens"] > threshold // 4
    assert 0 < small_resp.json()["input_tokens"] < 10
    # the big input was walked off the loop; the small one (under the threshold) on it
    assert any(ident != loop_thread for ident in seen) and loop_thread in seen
    await admin.close()


async def test_a_request_refused_before_its_body_is_read_says_the_connection_closes(make_gateway: Any) -> None:
    """A bad key is refused before the body is read; the server then closes the connection (it
    cannot find the next request behind the unread body), so the answer says ``Connection:
    close`` and keep-alive clients do not send their next request into a dying connection."""
    gw: GatewayServer = await make_gateway()
    headers = {"Authorization": "Bearer sk-not-a-key", "Content-Length": str(MIB)}
    status, answered, body = await unfinished_request(gw.base_url, "/v1/chat/completions", headers,
                                                      b'{"model": "gpt-4o-mini", "messa')
    assert status == 401 and body["error"]["code"] == "invalid_api_key"
    assert answered.get("connection") == "close"
    async with httpx.AsyncClient(base_url=gw.base_url) as client:  # a read body keeps the connection
        admin = AdminClient(gw.base_url)
        await admin.setup_root()
        key = await admin.add_token()
        await admin.close()
        kept = await client.post("/v1/chat/completions", json={"model": "no-such-model", "messages": [
            {"role": "user", "content": "x"}]}, headers={"Authorization": f"Bearer {key}"})
        assert kept.status_code in (404, 503) and kept.headers.get("connection") != "close"


async def test_each_openai_endpoint_refuses_a_body_over_its_own_cap_before_reading_it(make_gateway: Any) -> None:
    """Issue 12: completions, embeddings, moderations and Responses declare caps of their own,
    well under the relay's 128 MB: a declared length over one is a 413 before a byte is read
    (a server that waited for the body would never answer)."""
    gw, admin, key = await _gateway_with_key(make_gateway)
    assert gw.gateway.settings.max_body_mb == 128
    caps = {"/v1/completions": 16, "/v1/embeddings": 16, "/v1/engines/text-embedding-3-small/embeddings": 16,
            "/v1/moderations": 32, "/v1/responses": 64, "/v1/responses/compact": 64}
    for path, cap_mb in caps.items():
        headers = {"Authorization": f"Bearer {key}", "Content-Length": str(cap_mb * MIB + 1)}
        status, _, body = await unfinished_request(gw.base_url, path, headers, b'{"model": "gpt-4o-mini", "inp')
        assert status == 413 and body["error"]["code"] == "request_too_large", path
        assert body["error"]["message"].startswith(f"request body too large: the limit for this endpoint is "
                                                   f"{cap_mb * MIB} bytes"), path
    await admin.close()


async def test_a_chunked_multipart_upload_over_its_cap_is_cut_off_before_it_is_parsed(make_gateway: Any) -> None:
    """An audio upload (25 MB cap) sent chunked, with no Content-Length to refuse up front: the 413
    comes once the cap is passed, while the client is still sending, before any form parsing."""
    gw, admin, key = await _gateway_with_key(make_gateway)
    headers = {"Authorization": f"Bearer {key}", "Transfer-Encoding": "chunked",
               "Content-Type": "multipart/form-data; boundary=b"}
    start = b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n'
    sent = start + b"\0" * (26 * MIB)
    status, _, body = await unfinished_request(gw.base_url, "/v1/audio/transcriptions", headers, sent,
                                               chunk=1024 * 1024)
    assert status == 413 and body["error"]["code"] == "request_too_large"
    assert str(25 * MIB) in body["error"]["message"]
    await admin.close()
