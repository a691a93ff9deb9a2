"""SSRF (issue 8, #7): the guarded fetcher refuses loopback, private, link-local, cloud
metadata … addresses in every spelling, without connecting; re-checks every redirect
hop; connects to the address it checked (no DNS rebinding); caps hops, size and time.
Channel base URLs refuse metadata and link-local addresses always, loopback and private
ones with ``FAREGATE_CHANNEL_PRIVATE_ADDRESSES=deny``. No test needs the internet: names
resolve through an injected resolver, "public" addresses are routed to a local listener."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpcore
import pytest
import pytest_asyncio

from faregate.api import AddressCategory, BlockedAddress, FetchError, GuardedFetcher
from faregate.db import models as m
from faregate.management.channel_rules import check_base_url
from faregate.management.common import BadInput
from faregate.net import AddressPolicy, allowed_categories
from faregate.settings import CORE_SETTINGS, SettingError, Settings
from faregate.testing.harness import AdminClient, GatewayServer

PUBLIC_IP = "93.184.216.34"  # stands for an internet server; the test backend routes it to the listener


class Listener:
    """A tiny HTTP/1.1 server on 127.0.0.1 that counts connections (every answer closes)."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[tuple[str, str]] = []  # (path, Host header)
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        path = head[0].split(" ")[1]
        host = next((line.split(":", 1)[1].strip() for line in head[1:] if line.lower().startswith("host:")), "")
        self.requests.append((path, host))
        writer.write(await self._answer(path))
        await writer.drain()
        writer.close()

    async def _answer(self, target: str) -> bytes:
        parts = urlsplit(target)
        query = parse_qs(parts.query)
        if parts.path == "/redirect":
            return _response(302, b"", [("Location", query["to"][0])])
        if parts.path.startswith("/loop/"):
            return _response(302, b"", [("Location", f"/loop/{int(parts.path[6:]) + 1}")])
        if parts.path == "/big":
            return _response(200, b"x" * 2000)
        if parts.path == "/big-chunked":  # no Content-Length: the cap must count what is read
            chunk = b"x" * 500
            body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(4)) + b"0\r\n\r\n"
            return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + body
        if parts.path == "/slow":
            await asyncio.sleep(5)
        return _response(200, b"hello")


def _response(status: int, body: bytes, headers: Iterable[tuple[str, str]] = ()) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: close",
             *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class RecordingBackend(httpcore.AsyncNetworkBackend):
    """Below the guard: records every address the fetcher actually connects to, and
    routes ``PUBLIC_IP`` to the local listener (a public server, without the internet)."""

    def __init__(self, listener_port: int) -> None:
        self.connected: list[str] = []
        self._port = listener_port
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        self.connected.append(host)
        if host == PUBLIC_IP:
            host, port = "127.0.0.1", self._port
        return await self._inner.connect_tcp(host, port, timeout=timeout)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


NAMES: dict[str, list[str]] = {
    "public.test": [PUBLIC_IP],
    "internal.test": ["10.1.2.3"],
    "mixed.test": [PUBLIC_IP, "127.0.0.1"],
    "meta.test": ["169.254.169.254"],
    "v6meta.test": ["fd00:ec2::254"],
    "mapped.test": ["::ffff:192.168.0.1"],
    "linklocal6.test": ["fe80::1%eth0"],
}


async def fake_resolver(host: str) -> list[str]:
    try:
        return NAMES[host]
    except KeyError:
        raise socket.gaierror(socket.EAI_NONAME, "unknown in this test") from None


@pytest_asyncio.fixture
async def listener() -> AsyncIterator[Listener]:
    server = Listener()
    await server.start()
    yield server
    await server.stop()


@pytest_asyncio.fixture
async def backend(listener: Listener) -> RecordingBackend:
    return RecordingBackend(listener.port)


FetcherFactory = Callable[..., GuardedFetcher]


@pytest_asyncio.fixture
async def make_fetcher(backend: RecordingBackend) -> AsyncIterator[FetcherFactory]:
    made: list[GuardedFetcher] = []

    def factory(**kwargs: Any) -> GuardedFetcher:
        fetcher = GuardedFetcher(**{"resolver": fake_resolver, "network_backend": backend, **kwargs})
        made.append(fetcher)
        return fetcher

    yield factory
    for fetcher in made:
        await fetcher.aclose()


C = AddressCategory
BLOCKED: list[tuple[str, AddressCategory]] = [
    ("http://127.0.0.1:{port}/ok", C.LOOPBACK),
    ("http://127.0.0.2:{port}/ok", C.LOOPBACK),
    ("http://2130706433:{port}/ok", C.LOOPBACK),  # decimal
    ("http://0177.0.0.1:{port}/ok", C.LOOPBACK),  # octal
    ("http://0x7f.1:{port}/ok", C.LOOPBACK),  # hex, short form
    ("http://0x7f000001:{port}/ok", C.LOOPBACK),
    ("http://127.1:{port}/ok", C.LOOPBACK),
    ("http://127.0.0.1.:{port}/ok", C.LOOPBACK),  # trailing dot
    ("http://localhost:{port}/ok", C.LOOPBACK),
    ("http://LOCALHOST.:{port}/ok", C.LOOPBACK),
    ("http://api.localhost:{port}/ok", C.LOOPBACK),
    ("http://[::1]:{port}/ok", C.LOOPBACK),
    ("http://[::ffff:127.0.0.1]:{port}/ok", C.LOOPBACK),  # IPv4-mapped
    ("http://[::ffff:7f00:1]:{port}/ok", C.LOOPBACK),
    ("http://[2002:7f00:1::]:{port}/ok", C.LOOPBACK),  # 6to4
    ("http://[64:ff9b::7f00:1]:{port}/ok", C.LOOPBACK),  # NAT64
    ("http://mixed.test:{port}/ok", C.LOOPBACK),  # one bad answer among good ones
    ("http://0.0.0.0:{port}/ok", C.UNSPECIFIED),
    ("http://0:{port}/ok", C.UNSPECIFIED),
    ("http://[::]:{port}/ok", C.UNSPECIFIED),
    ("http://169.254.169.254/latest/meta-data/", C.METADATA),
    ("http://2852039166/latest/meta-data/", C.METADATA),  # 169.254.169.254, decimal
    ("http://[::ffff:169.254.169.254]/", C.METADATA),
    ("http://[fd00:ec2::254]/", C.METADATA),
    ("http://100.100.100.200/", C.METADATA),
    ("http://metadata.google.internal/computeMetadata/v1/", C.METADATA),
    ("http://metadata.google.internal./", C.METADATA),
    ("http://meta.test/", C.METADATA),
    ("http://v6meta.test/", C.METADATA),
    ("http://10.0.0.1/", C.PRIVATE),
    ("http://172.16.5.4/", C.PRIVATE),
    ("http://192.168.1.1/", C.PRIVATE),
    ("http://[fc00::1]/", C.PRIVATE),
    ("http://[fd12:3456::1]/", C.PRIVATE),
    ("http://internal.test/", C.PRIVATE),
    ("http://mapped.test/", C.PRIVATE),
    ("http://169.254.1.1/", C.LINK_LOCAL),
    ("http://[fe80::1]/", C.LINK_LOCAL),
    ("http://[fe80::1%25eth0]/", C.LINK_LOCAL),
    ("http://linklocal6.test/", C.LINK_LOCAL),
    ("http://100.64.0.1/", C.SHARED),
    ("http://224.0.0.1/", C.MULTICAST),
    ("http://[ff02::1]/", C.MULTICAST),
    ("http://240.0.0.1/", C.RESERVED),
    ("http://255.255.255.255/", C.BROADCAST),
    ("http://192.0.2.1/", C.PRIVATE),  # documentation range, is_private in the stdlib
]


@pytest.mark.parametrize(("template", "category"), BLOCKED, ids=[t for t, _ in BLOCKED])
async def test_blocked_addresses_are_refused_without_connecting(
        make_fetcher: FetcherFactory, backend: RecordingBackend, listener: Listener, template: str,
        category: AddressCategory) -> None:
    url = template.format(port=listener.port)
    with pytest.raises(BlockedAddress) as caught:
        await make_fetcher().fetch(url)
    err = caught.value
    assert (err.status, err.code, err.category) == (400, "blocked_address", category)
    assert str(category) in err.message and str(urlsplit(url).hostname) in err.message
    assert backend.connected == [] and listener.connections == 0


@pytest.mark.parametrize("url", ["file:///etc/passwd", "gopher://127.0.0.1:6379/_INFO", "ftp://example.com/",
                                 "http:///nohost", "dict://127.0.0.1:11211/"])
async def test_other_schemes_and_hostless_urls_are_refused(make_fetcher: FetcherFactory, backend: RecordingBackend,
                                                           url: str) -> None:
    with pytest.raises(FetchError) as caught:
        await make_fetcher().fetch(url)
    assert caught.value.status == 400 and backend.connected == []


async def test_errors_never_echo_credentials_or_query(make_fetcher: FetcherFactory) -> None:
    with pytest.raises(BlockedAddress) as caught:
        await make_fetcher().fetch("http://admin:hunter2@10.0.0.1/x?key=sk-secret123")
    assert "hunter2" not in caught.value.message and "sk-secret" not in caught.value.message
    with pytest.raises(FetchError) as unresolved:
        await make_fetcher().fetch("http://nowhere.test/?token=sk-secret123")
    assert "sk-secret" not in unresolved.value.message and "nowhere.test" in unresolved.value.message


async def test_allowed_targets_are_fetched(make_fetcher: FetcherFactory, backend: RecordingBackend,
                                           listener: Listener) -> None:
    fetched = await make_fetcher(allow={AddressCategory.LOOPBACK}).fetch(f"http://127.0.0.1:{listener.port}/ok")
    assert (fetched.status, fetched.content) == (200, b"hello")
    # a public name: connected to the address it resolved to, Host (and SNI) keep the name
    fetched = await make_fetcher().fetch(f"http://public.test:{listener.port}/ok")
    assert (fetched.status, fetched.content, fetched.url) == (200, b"hello", f"http://public.test:{listener.port}/ok")
    assert listener.requests[-1] == ("/ok", f"public.test:{listener.port}")
    assert backend.connected == ["127.0.0.1", PUBLIC_IP]


@pytest.mark.parametrize(("target", "category"), [
    ("http://127.0.0.1:{port}/ok", C.LOOPBACK),
    ("http://localhost:{port}/ok", C.LOOPBACK),
    ("http://169.254.169.254/latest/meta-data/", C.METADATA),
    ("http://internal.test/", C.PRIVATE),
    ("http://[::ffff:10.0.0.1]/", C.PRIVATE),
])
async def test_a_redirect_to_a_blocked_address_is_refused_at_the_hop(
        make_fetcher: FetcherFactory, backend: RecordingBackend, listener: Listener, target: str,
        category: AddressCategory) -> None:
    url = f"http://public.test:{listener.port}/redirect?to={target.format(port=listener.port)}"
    with pytest.raises(BlockedAddress) as caught:
        await make_fetcher().fetch(url)
    assert caught.value.category == category
    assert backend.connected == [PUBLIC_IP]  # the first hop only
    assert [path for path, _ in listener.requests] == [urlsplit(url).path + "?" + urlsplit(url).query]


async def test_redirects_to_other_schemes_are_refused(make_fetcher: FetcherFactory, backend: RecordingBackend,
                                                      listener: Listener) -> None:
    with pytest.raises(FetchError):
        await make_fetcher().fetch(f"http://public.test:{listener.port}/redirect?to=file:///etc/passwd")
    assert backend.connected == [PUBLIC_IP]


async def test_allowed_redirects_are_followed(make_fetcher: FetcherFactory, listener: Listener) -> None:
    fetcher = make_fetcher(allow={AddressCategory.LOOPBACK})
    fetched = await fetcher.fetch(f"http://127.0.0.1:{listener.port}/redirect?to=/ok")
    assert (fetched.status, fetched.content) == (200, b"hello")
    assert fetched.url == f"http://127.0.0.1:{listener.port}/ok"


async def test_redirect_hops_are_bounded(make_fetcher: FetcherFactory, listener: Listener) -> None:
    fetcher = make_fetcher(allow={AddressCategory.LOOPBACK}, max_redirects=3)
    with pytest.raises(FetchError) as caught:
        await fetcher.fetch(f"http://127.0.0.1:{listener.port}/loop/0")
    assert caught.value.code == "too_many_redirects"
    assert [path for path, _ in listener.requests] == ["/loop/0", "/loop/1", "/loop/2", "/loop/3"]
    fetched = await fetcher.fetch(f"http://127.0.0.1:{listener.port}/redirect?to=/ok")
    assert fetched.status == 200  # one hop is fine


async def test_dns_rebinding_cannot_reach_loopback(listener: Listener, backend: RecordingBackend) -> None:
    """The resolver answers a public address, then 127.0.0.1: the fetcher looks up once
    per connection and connects to exactly what it checked."""
    answers = [[PUBLIC_IP], ["127.0.0.1"]]
    calls: list[str] = []

    async def rebinding(host: str) -> Sequence[str]:
        calls.append(host)
        return answers[min(len(calls), len(answers)) - 1]

    async with GuardedFetcher(resolver=rebinding, network_backend=backend) as fetcher:
        fetched = await fetcher.fetch(f"http://rebind.test:{listener.port}/ok")
        assert fetched.content == b"hello" and calls == ["rebind.test"] and backend.connected == [PUBLIC_IP]
        with pytest.raises(BlockedAddress) as caught:  # the next connection (the listener closed the first)
            await fetcher.fetch(f"http://rebind.test:{listener.port}/ok")
        assert caught.value.category == AddressCategory.LOOPBACK
    assert backend.connected == [PUBLIC_IP] and "127.0.0.1" not in backend.connected
    assert listener.connections == 1  # the routed "public" one


@pytest.mark.parametrize("path", ["/big", "/big-chunked"])
async def test_response_size_is_capped(make_fetcher: FetcherFactory, listener: Listener, path: str) -> None:
    fetcher = make_fetcher(allow={AddressCategory.LOOPBACK}, max_bytes=1000)
    with pytest.raises(FetchError) as caught:
        await fetcher.fetch(f"http://127.0.0.1:{listener.port}{path}")
    assert caught.value.code == "response_too_large" and "1000 bytes" in caught.value.message
    fetched = await fetcher.fetch(f"http://127.0.0.1:{listener.port}{path}", max_bytes=2000)
    assert len(fetched.content) == 2000


async def test_a_slow_server_times_out(make_fetcher: FetcherFactory, listener: Listener) -> None:
    fetcher = make_fetcher(allow={AddressCategory.LOOPBACK}, timeout=0.3)
    with pytest.raises(FetchError) as caught:
        await fetcher.fetch(f"http://127.0.0.1:{listener.port}/slow")
    assert caught.value.code == "fetch_timeout"


# --- channel base URLs (admin-configured; the addresses always refused: test_ssrf_channels_refused.py) ---

CHANNEL = {"type": 1, "key": "sk-upstream", "name": "ch", "models": "gpt-4o", "group": "default"}


async def _post_channel(admin: AdminClient, base_url: str) -> Any:
    return await admin.http.post("/api/channel/", json={"mode": "single", "channel": {**CHANNEL, "base_url": base_url}},
                                 headers={"New-Api-User": str(admin.user_id)})


async def test_loopback_and_private_channels_are_allowed_by_default(admin: AdminClient) -> None:
    for base_url in ("http://127.0.0.1:8000/v1", "http://localhost:11434", "http://10.0.0.5/v1", "http://[::1]:8000",
                     "http://100.64.1.2/v1"):
        await admin.add_channel(base_url=base_url, models="m")


async def test_private_channels_are_refused_with_the_setting(make_gateway: Callable[..., Awaitable[GatewayServer]]
                                                             ) -> None:
    server = await make_gateway(settings={"channel_private_addresses": "deny"})
    admin = AdminClient(server.base_url)
    try:
        await admin.setup_root()
        for base_url in ("http://127.0.0.1:8000/v1", "http://localhost:11434", "http://0x7f.1/v1",
                         "http://10.0.0.5/v1", "http://[fd00::5]/v1", "http://0.0.0.0:8000"):
            resp = await _post_channel(admin, base_url)
            assert resp.status_code == 400, base_url
            assert "FAREGATE_CHANNEL_PRIVATE_ADDRESSES=deny" in resp.json()["message"]
            resp = await admin.http.post("/api/channel/fetch_models", headers={"New-Api-User": str(admin.user_id)},
                                         json={"type": 1, "key": "sk-x", "base_url": base_url})
            assert resp.status_code == 400 and "FAREGATE_CHANNEL_PRIVATE_ADDRESSES=deny" in resp.json()["message"]
        resp = await _post_channel(admin, "http://169.254.169.254/v1")
        assert resp.status_code == 400 and "cloud metadata" in resp.json()["message"]
        await admin.add_channel(base_url="https://8.8.8.8/v1", models="m")  # public: still fine
        assert await m.Channel.all().count() == 1
    finally:
        await admin.close()


@pytest.mark.parametrize(("host", "private_addresses", "refused"), [
    ("meta.test", "allow", "cloud metadata"),
    ("linklocal6.test", "allow", "link-local"),
    ("mixed.test", "allow", None),  # public + loopback: loopback is allowed here
    ("mixed.test", "deny", "loopback"),
    ("internal.test", "allow", None),
    ("internal.test", "deny", "private"),
    ("public.test", "deny", None),
    ("nowhere.test", "deny", None),  # does not resolve (yet): allowed
])
async def test_channel_names_are_checked_by_what_they_resolve_to(host: str, private_addresses: str,
                                                                 refused: str | None) -> None:
    check = check_base_url(f"https://{host}/v1", AddressPolicy(allowed_categories(private_addresses), fake_resolver))
    if refused is None:
        await check
        return
    with pytest.raises(BadInput) as caught:
        await check
    assert caught.value.status == 400 and refused in caught.value.message and host in caught.value.message


async def test_a_slow_resolver_does_not_hold_up_a_channel_save(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("faregate.management.channel_rules.RESOLVE_TIMEOUT", 0.1)

    async def hanging(host: str) -> list[str]:
        await asyncio.sleep(10)
        return []

    await asyncio.wait_for(check_base_url("https://slow.test/v1", AddressPolicy(frozenset(), hanging)), 2)


def test_the_setting_parses_strictly() -> None:
    def value(raw: str) -> Any:
        return Settings(CORE_SETTINGS, environ={"FAREGATE_CHANNEL_PRIVATE_ADDRESSES": raw}).channel_private_addresses

    assert value("") == "allow" and value("Deny ") == "deny" and value("allow") == "allow"
    with pytest.raises(SettingError, match="allow or deny"):
        value("no")
