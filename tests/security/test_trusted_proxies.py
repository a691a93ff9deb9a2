"""Forwarded headers are believed only from ``trusted_proxies``: nobody else can choose
the client address an IP allow list (or the login throttle) sees, nor forge the request
id the logs and the answer carry."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from faregate.edge.proxies import TrustedProxies
from faregate.testing.harness import AdminClient

CLIENT = "203.0.113.7"


async def _seen(trusted: tuple[str, ...], peer: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.update(scope)

    scope = {"type": "http", "client": (peer, 5555), "headers": headers}
    await TrustedProxies(app, trusted)(scope, None, None)  # type: ignore[arg-type]
    return seen


@pytest.mark.parametrize("trusted,peer,forwarded,expected", [
    (("10.0.0.0/8",), "10.1.2.3", b"198.51.100.1, 203.0.113.7", CLIENT),  # the right-most untrusted hop
    (("10.0.0.0/8",), "10.1.2.3", b"203.0.113.7, 10.9.9.9", CLIENT),  # chained trusted proxies skipped
    (("10.0.0.0/8",), "10.1.2.3", b"not-an-ip, 203.0.113.7", CLIENT),
    (("10.0.0.0/8",), "10.1.2.3", b"203.0.113.7, junk", "10.1.2.3"),  # garbage in the chain: no guess
    (("10.0.0.0/8",), "192.0.2.9", b"203.0.113.7", "192.0.2.9"),  # not a trusted peer: ignored
    ((), "10.1.2.3", b"203.0.113.7", "10.1.2.3"),  # nothing trusted by default
])
async def test_client_address(trusted: tuple[str, ...], peer: str, forwarded: bytes, expected: str) -> None:
    scope = await _seen(trusted, peer, [(b"x-forwarded-for", forwarded)])
    assert scope["client"][0] == expected


async def test_untrusted_peers_lose_the_headers() -> None:
    headers = [(b"x-request-id", b"forged"), (b"x-real-ip", b"1.2.3.4"), (b"accept", b"*/*")]
    scope = await _seen(("10.0.0.0/8",), "192.0.2.9", headers)
    assert scope["headers"] == [(b"accept", b"*/*")]
    kept = await _seen(("10.0.0.0/8",), "10.0.0.1", headers)
    assert kept["headers"] == headers and kept["client"][0] == "1.2.3.4"


@pytest.mark.parametrize("trusted,expect", [((), 403), (("127.0.0.1",), 200)])
async def test_allow_list_sees_the_forwarded_address_only_behind_a_trusted_proxy(
        make_gateway: Any, trusted: tuple[str, ...], expect: int) -> None:
    server = await make_gateway(settings={"trusted_proxies": trusted})
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    key = await admin.add_token(allow_ips=CLIENT)
    await admin.close()
    async with httpx.AsyncClient(base_url=server.base_url) as client:
        answer = await client.get("/v1/models", headers={"Authorization": f"Bearer {key}", "X-Forwarded-For": CLIENT})
        assert answer.status_code == expect, answer.text
        direct = await client.get("/v1/models", headers={"Authorization": f"Bearer {key}"})
        assert direct.status_code == 403


async def test_request_id_from_an_untrusted_peer_is_replaced(make_gateway: Any) -> None:
    plain = await make_gateway()
    async with httpx.AsyncClient() as client:
        forged = await client.get(plain.base_url + "/api/status", headers={"X-Request-Id": "forged-1"})
        assert forged.headers["x-request-id"] != "forged-1" and forged.headers["x-oneapi-request-id"]


async def test_request_id_from_a_trusted_proxy_is_kept(make_gateway: Any) -> None:
    proxied = await make_gateway(settings={"trusted_proxies": ("127.0.0.1/32",)})
    async with httpx.AsyncClient() as client:
        kept = await client.get(proxied.base_url + "/api/status", headers={"X-Request-Id": "edge-42"})
        assert kept.headers["x-request-id"] == "edge-42"
        relay = await client.get(proxied.base_url + "/v1/models", headers={"X-Request-Id": "edge-43"})
        assert relay.headers["x-request-id"] == "edge-43"  # a refusal (no key) carries it too
        bad = await client.get(proxied.base_url + "/api/status", headers={"X-Request-Id": "a;b" * 60})
        assert bad.headers["x-request-id"] != "a;b" * 60


async def test_a_trusted_proxys_request_id_longer_than_the_log_column_is_replaced(
        mariadb_url: str, make_gateway: Any, fake_openai: Any) -> None:
    """The log's request_id column holds 64 characters: a longer id, even from a trusted proxy,
    would make MariaDB refuse the row and with it the billing batch. Such an id is replaced;
    one of 64 is kept, and its request is billed and logged under it."""
    from faregate.testing.harness import AdminClient
    from faregate.testing.logs import consume_logs

    proxied = await make_gateway(db_url=mariadb_url, settings={"trusted_proxies": ("127.0.0.1/32",)})
    admin = AdminClient(proxied.base_url)
    await admin.setup_root()
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o-mini")
    key = await admin.add_token()
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(base_url=proxied.base_url) as client:
        for proxy_id in ("e" * 65, "k" * 64):
            answer = await client.post("/v1/chat/completions", json=body,
                                       headers={"Authorization": f"Bearer {key}", "X-Request-Id": proxy_id})
            assert answer.status_code == 200, answer.text
    await admin.close()
    rows = await consume_logs(proxied)
    ids = [row.request_id for row in rows]
    assert len(rows) == 2 and "k" * 64 in ids and "e" * 65 not in ids
    assert all(len(i or "") <= 64 for i in ids)
