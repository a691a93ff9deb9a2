"""DNS rebinding against channels (issue 26, item 8): a channel's address is checked when the
channel is saved, and again at every connection a channel makes, against the same policy
(cloud metadata and link-local never; loopback and private only while
``FAREGATE_CHANNEL_PRIVATE_ADDRESSES`` allows them). A name that resolved to an allowed
address when the channel was saved and resolves to 169.254.169.254 (or, under ``deny``, to
10.x) later is refused, before any connection, by the relay (plain and streaming chat, a
realtime WebSocket), the channel test, the model list, the balance query, a cloud channel's
token grant and through a channel's proxy; a literal address is checked at connect time too;
a pooled keep-alive connection, checked when it was opened, keeps working, and a new one
after the name moved is checked; with two workers, each checks its own connections.

DNS is played by the test: names under ``.rebind.test`` answer what the test says through the
event loop's ``getaddrinfo`` (what both the gateway's resolver and aiohttp's own call). Every
socket connect of the process is watched (``loop.sock_connect``): one to anything beyond
loopback is recorded and fails without a packet sent, and each test asserts there was none."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from ipaddress import ip_address
from typing import Any

import httpx
import pytest
import pytest_asyncio
import websockets

from faregate.contracts import UpstreamRequest
from faregate.db import models as m
from faregate.errors import GatewayError
from faregate.net import AddressPolicy, allowed_categories
from faregate.net.errors import refusal
from faregate.testing.harness import AdminClient, GatewayProcess, GatewayServer
from faregate.testing.proxies import HttpProxy, Socks5Proxy
from faregate.upstream import UpstreamAddressRefused, UpstreamClient, UpstreamTransportError
from faregate_adapter_openai.testing import FakeOpenAI

KEY = "sk-rebinding-upstream-0123456789"
MODEL = "gpt-4o-mini"
METADATA = "169.254.169.254"


class FakeDNS:
    """The event loop's ``getaddrinfo`` with the answers a test sets for its names; any
    other name goes to the real one."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.answers: dict[str, list[str]] = {}
        self.asked: list[str] = []
        self._real = loop.getaddrinfo

    async def getaddrinfo(self, host: Any, port: Any, *, family: int = 0, type: int = 0, proto: int = 0,
                          flags: int = 0) -> list[Any]:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in self.answers:
            return await self._real(host, port, family=family, type=type, proto=proto, flags=flags)
        self.asked.append(name)
        found = []
        for address in self.answers[name]:
            kind = socket.AF_INET6 if ":" in address else socket.AF_INET
            if family in (0, kind):
                number = int(port or 0)
                found.append((kind, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                              (address, number, 0, 0) if kind == socket.AF_INET6 else (address, number)))
        if not found:
            raise socket.gaierror(socket.EAI_NONAME, "no such name in this test")
        return found


class ConnectWatch:
    """Every ``sock_connect`` of the loop: loopback ones go through, any other is recorded
    and fails at once (no packet leaves the host)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.beyond_loopback: list[str] = []
        self._real = loop.sock_connect

    async def sock_connect(self, sock: socket.socket, address: Any) -> None:
        host = str(address[0])
        if not ip_address(host.split("%", 1)[0]).is_loopback:
            self.beyond_loopback.append(host)
            raise OSError(errno.ENETUNREACH, "this test sends nothing beyond loopback")
        await self._real(sock, address)


@pytest_asyncio.fixture
async def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    loop = asyncio.get_running_loop()
    fake = FakeDNS(loop)
    monkeypatch.setattr(loop, "getaddrinfo", fake.getaddrinfo)
    return fake


@pytest_asyncio.fixture
async def watch(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ConnectWatch]:
    loop = asyncio.get_running_loop()
    spy = ConnectWatch(loop)
    monkeypatch.setattr(loop, "sock_connect", spy.sock_connect)
    yield spy
    assert spy.beyond_loopback == [], "a connection beyond loopback was attempted"


@pytest_asyncio.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(key=KEY) as server:
        yield server


def _admin_headers(admin: AdminClient) -> dict[str, str]:
    return {"New-Api-User": str(admin.user_id)}


async def _channel_calls_are_refused(server: GatewayServer, admin: AdminClient, fake: FakeOpenAI, dns: FakeDNS,
                                     name: str, saved: str, moved: str, category: str) -> None:
    """Save a channel while ``name`` resolves to ``saved``, move it to ``moved``, then make
    every kind of call the channel makes: each refused, the upstream never reached."""
    dns.answers[name] = [saved]
    await admin.set_option("ChannelCooldownBaseSeconds", "0")  # a refused attempt does not bench the channel
    await admin.set_option("ModelRatio", {MODEL: 1, "gpt-realtime": 1})
    channel = await admin.add_channel(base_url=f"http://{name}:{fake.port}", models=f"{MODEL},gpt-realtime", key=KEY)
    token = await admin.add_token()
    dns.answers[name] = [moved]  # the rebinding
    before = len(fake.requests)

    headers = {"Authorization": f"Bearer {token}"}
    for stream in (False, True):
        resp = await admin.http.post("/v1/chat/completions", headers=headers, json={
            "model": MODEL, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
        error = resp.json()["error"]
        assert (resp.status_code, error["code"]) == (502, "address_refused"), resp.text
        assert moved not in resp.text and name not in resp.text  # the caller learns neither
    with pytest.raises(websockets.InvalidStatus) as refused:  # a realtime session's dial
        async with websockets.connect(server.base_url.replace("http://", "ws://") + "/v1/realtime?model=gpt-realtime",
                                      additional_headers=headers):
            pass
    assert refused.value.response.status_code == 502

    tested = (await admin.http.get(f"/api/channel/test/{channel}", headers=_admin_headers(admin))).json()
    listed = await admin.call("GET", f"/api/channel/fetch_models/{channel}")
    balance = await admin.call("GET", f"/api/channel/update_balance/{channel}")
    for answer in (tested, listed, balance):  # the admin is told the host and why, never the address
        assert answer["success"] is False and refusal(name, category, resolved=True) in answer["message"], answer
        assert moved not in answer["message"]
    assert len(fake.requests) == before and not fake.realtime.sessions
    await server.gateway.ledger.flush()
    for row in await m.Log.filter(type=m.LOG_ERROR):
        assert moved not in row.content and name not in row.content


async def test_every_call_of_a_channel_whose_name_moved_to_metadata_is_refused(
        gateway: GatewayServer, admin: AdminClient, fake: FakeOpenAI, dns: FakeDNS, watch: ConnectWatch) -> None:
    await _channel_calls_are_refused(gateway, admin, fake, dns, "api.rebind.test", "127.0.0.1", METADATA,
                                     "cloud metadata")


@pytest.mark.parametrize(("moved", "category"), [("10.0.0.7", "private"), ("127.0.0.1", "loopback")])
async def test_with_private_addresses_denied_a_name_moving_inside_is_refused(
        make_gateway: Callable[..., Awaitable[GatewayServer]], fake: FakeOpenAI, dns: FakeDNS, watch: ConnectWatch,
        moved: str, category: str) -> None:
    server = await make_gateway(settings={"channel_private_addresses": "deny"})
    admin = AdminClient(server.base_url)
    try:
        await admin.setup_root()
        # public when saved (nothing is connected to at save time)
        await _channel_calls_are_refused(server, admin, fake, dns, "api.rebind.test", "93.184.216.34", moved,
                                         category)
    finally:
        await admin.close()


def _lease_workers(data_dir: str, token_id: int) -> set[str]:
    """The workers that took a request of the key (each holds a quota lease on it)."""
    with sqlite3.connect(f"file:{os.path.join(data_dir, 'faregate.db')}?mode=ro", uri=True, timeout=10) as db:
        rows = db.execute("SELECT DISTINCT worker FROM quota_leases WHERE kind = 'token' AND ref_id = ?",
                          (token_id,)).fetchall()
    return {row[0] for row in rows}


async def test_every_worker_checks_the_address_when_it_connects(tmp_path: Any, fake: FakeOpenAI) -> None:
    """A channel stored while loopback was allowed, then two workers started with
    ``deny``: whichever worker takes a request refuses the connection (each worker's own
    connector checks; nothing is shared that one worker could skip)."""
    data_dir = str(tmp_path / "gw")
    allowing = GatewayProcess(data_dir)
    await asyncio.to_thread(allowing.start)
    admin = AdminClient(allowing.base_url)
    try:
        await admin.setup_root()
        await admin.set_option("ChannelCooldownBaseSeconds", "0")
        await admin.set_option("ModelRatio", {MODEL: 1})
        await admin.add_channel(base_url=fake.base_url, models=MODEL, key=KEY)
    finally:
        await admin.close()
        await asyncio.to_thread(allowing.stop)
    denying = GatewayProcess(data_dir, workers=2, env={"FAREGATE_CHANNEL_PRIVATE_ADDRESSES": "deny"})
    await asyncio.to_thread(denying.start)
    admin = AdminClient(denying.base_url)
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    try:
        await admin.setup_root()
        for attempt in range(12):  # new connections each time, until the kernel gave some to each worker
            token = await admin.ok("POST", "/api/token/", json={"name": f"burst-{attempt}", "remain_quota": 10**7,
                                                                 "expired_time": -1})
            key = "sk-" + (await admin.ok("POST", f"/api/token/{token['id']}/key"))["key"]
            clients = [httpx.AsyncClient(base_url=denying.base_url, timeout=30) for _ in range(20)]
            try:
                answers = await asyncio.gather(*(c.post("/v1/chat/completions", json=body,
                                                        headers={"Authorization": f"Bearer {key}"}) for c in clients))
            finally:
                for client in clients:
                    await client.aclose()
            assert all((a.status_code, a.json()["error"]["code"]) == (502, "address_refused") for a in answers), \
                [a.text for a in answers]
            if len(_lease_workers(data_dir, token["id"])) == 2:
                break
        else:
            raise AssertionError("no burst reached both workers")
        assert fake.requests == []
    finally:
        await admin.close()
        await asyncio.to_thread(denying.stop)


# --- the upstream client itself --------------------------------------------------------

class KeepAlive:
    """An HTTP/1.1 server on loopback that keeps connections open and counts them; a
    ``/hold`` request's body waits for :meth:`release` (its connection stays busy)."""

    def __init__(self) -> None:
        self.connections = 0
        self.server: asyncio.Server | None = None
        self._held = asyncio.Event()
        self._open: list[asyncio.StreamWriter] = []

    def release(self) -> None:
        self._held.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._open.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n")
                if head.startswith(b"GET /hold "):
                    await writer.drain()
                    await self._held.wait()
                writer.write(b"ok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def __aenter__(self) -> KeepAlive:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self._open:  # the kept-alive connections end too, and their handlers with them
            writer.close()
        await self.server.wait_closed()

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])


@pytest_asyncio.fixture
async def make_client() -> AsyncIterator[Callable[..., Awaitable[UpstreamClient]]]:
    made: list[UpstreamClient] = []

    async def factory(policy: str = "allow") -> UpstreamClient:
        client = UpstreamClient(connect_timeout=5.0, first_byte_timeout=30.0,
                                addresses=AddressPolicy(allowed_categories(policy)))
        await client.start()
        made.append(client)
        return client

    yield factory
    for client in made:
        await client.stop()


async def _get(client: UpstreamClient, url: str, proxy: str = "") -> bytes:
    resp = await client.send(UpstreamRequest("GET", url, {}), proxy=proxy)
    try:
        return await resp.aread()
    finally:
        await resp.aclose()


@pytest.mark.parametrize(("answers", "policy", "category"), [
    ([METADATA], "allow", "cloud metadata"),
    (["fd00:ec2::254"], "allow", "cloud metadata"),
    (["::ffff:169.254.169.254"], "allow", "cloud metadata"),
    (["169.254.10.10"], "allow", "link-local"),
    (["127.0.0.1", METADATA], "allow", "cloud metadata"),  # one refused answer refuses the name
    (["10.0.0.7"], "deny", "private"),
    (["127.0.0.1"], "deny", "loopback"),
])
async def test_a_refused_answer_is_never_connected(make_client: Callable[..., Awaitable[UpstreamClient]],
                                                   dns: FakeDNS, watch: ConnectWatch, answers: list[str],
                                                   policy: str, category: str) -> None:
    client = await make_client(policy)
    dns.answers["up.rebind.test"] = answers
    calls = [_get(client, "http://up.rebind.test:8080/v1/models") for _ in range(8)]  # at once: one lookup, all refused
    for outcome in await asyncio.gather(*calls, return_exceptions=True):
        assert isinstance(outcome, UpstreamAddressRefused), outcome
        assert str(outcome) == refusal("up.rebind.test", category, resolved=True)


@pytest.mark.parametrize(("url", "policy"), [
    (f"http://{METADATA}/latest/meta-data/", "allow"),
    ("http://[::ffff:169.254.169.254]/", "allow"),
    ("http://[fd00:ec2::254]/", "allow"),
    ("http://[fe80::1]:8080/", "allow"),
    ("ws://169.254.10.10/v1/realtime", "allow"),
    ("http://10.0.0.7:8000/v1", "deny"),
    ("http://127.0.0.1:9/v1", "deny"),
])
async def test_a_literal_address_is_checked_when_connecting(make_client: Callable[..., Awaitable[UpstreamClient]],
                                                            watch: ConnectWatch, url: str, policy: str) -> None:
    """aiohttp hands literal addresses to no resolver: the socket factory checks them."""
    client = await make_client(policy)
    with pytest.raises(UpstreamAddressRefused):
        if url.startswith("ws://"):
            await client.websocket(UpstreamRequest("WEBSOCKET", url, {}))
        else:
            await _get(client, url)


async def test_a_pooled_connection_keeps_working_and_a_new_one_is_checked(
        make_client: Callable[..., Awaitable[UpstreamClient]], dns: FakeDNS, watch: ConnectWatch) -> None:
    client = await make_client()
    async with KeepAlive() as upstream:
        url = f"http://pool.rebind.test:{upstream.port}/v1/chat/completions"
        dns.answers["pool.rebind.test"] = ["127.0.0.1"]
        assert await _get(client, url) == b"ok"
        dns.answers["pool.rebind.test"] = [METADATA]  # the name moves
        assert await _get(client, url) == b"ok"  # the keep-alive connection, checked when it was opened
        assert upstream.connections == 1
        hold = url.replace("/v1/chat/completions", "/hold")
        held = await client.send(UpstreamRequest("GET", hold, {}), stream=True)  # keeps that connection busy
        # a second connection: aiohttp's DNS cache still answers the (checked) loopback address
        busy = await client.send(UpstreamRequest("GET", hold, {}), stream=True)
        assert upstream.connections == 2
        client._session.connector.clear_dns_cache()  # type: ignore[union-attr]  # noqa: SLF001 - its 10 s passed
        with pytest.raises(UpstreamAddressRefused):  # a third connection: the name is looked up again, refused
            await _get(client, url)
        upstream.release()
        for resp in (held, busy):
            assert await resp.aread() == b"ok"
            await resp.aclose()
        assert await _get(client, url) == b"ok"  # back on a pooled connection
        assert upstream.connections == 2
        assert dns.asked.count("pool.rebind.test") == 2


async def test_a_proxy_s_address_is_checked_at_each_connection(
        make_client: Callable[..., Awaitable[UpstreamClient]], dns: FakeDNS, watch: ConnectWatch) -> None:
    """The gateway connects to the proxy, not to the target: the proxy's address is checked
    by the same rule (names and literals, http and socks alike); the target's name is the
    proxy's to resolve."""
    client = await make_client()
    async with KeepAlive() as upstream, KeepAlive() as other, HttpProxy() as http_proxy, \
            Socks5Proxy() as socks_proxy:
        dns.answers["proxy.rebind.test"] = ["127.0.0.1"]
        for proxy in (f"http://proxy.rebind.test:{http_proxy.port}", f"socks5://proxy.rebind.test:{socks_proxy.port}"):
            assert await _get(client, f"http://127.0.0.1:{upstream.port}/v1/models", proxy) == b"ok"
        dns.answers["proxy.rebind.test"] = [METADATA]
        client._session.connector.clear_dns_cache()  # type: ignore[union-attr]  # noqa: SLF001 - its 10 s passed
        target = f"http://127.0.0.1:{other.port}/v1/models"  # a target with no pooled connection: a new one is made
        for proxy in (f"http://proxy.rebind.test:{http_proxy.port}", f"socks5://proxy.rebind.test:{socks_proxy.port}",
                      f"http://{METADATA}:3128", f"socks5://{METADATA}:1080", "socks5://[fe80::1]:1080"):
            with pytest.raises(UpstreamAddressRefused) as refused:
                await _get(client, target, proxy)
            assert "password" not in str(refused.value)
        with pytest.raises(UpstreamAddressRefused) as refused:  # a proxy's credentials never reach the message
            await _get(client, target, f"socks5://alice:s3cret@proxy.rebind.test:{socks_proxy.port}")
        assert "s3cret" not in str(refused.value) and "proxy.rebind.test" in str(refused.value)
    assert len(http_proxy.seen) == 1 and len(socks_proxy.seen) == 1  # only the calls before the name moved


async def test_a_name_that_does_not_resolve_is_a_transport_error(
        make_client: Callable[..., Awaitable[UpstreamClient]], dns: FakeDNS) -> None:
    client = await make_client()
    with pytest.raises(UpstreamTransportError) as failed:
        await _get(client, "http://gone.rebind.test/v1/models")
    assert not isinstance(failed.value, UpstreamAddressRefused)


async def test_a_cloud_channel_s_token_grant_is_checked_too(
        make_client: Callable[..., Awaitable[UpstreamClient]], dns: FakeDNS, watch: ConnectWatch) -> None:
    """A Vertex service account's ``token_uri`` may be any https URL: its name resolving to a
    metadata server is refused when the grant connects, and not tried again."""
    from faregate_adapter_vertex.keys import service_account
    from faregate_adapter_vertex.testing import make_service_account
    from faregate_adapter_vertex.tokens import TokenCache

    client = await make_client()
    dns.answers["oauth.rebind.test"] = [METADATA]
    account = make_service_account("https://oauth.rebind.test/token")
    with pytest.raises(GatewayError) as refused:
        await TokenCache(lambda: client).token(account.key, service_account(account.key))
    assert refused.value.status == 503
    assert "does not connect to the token endpoint's address" in refused.value.message
    assert dns.asked == ["oauth.rebind.test"]
