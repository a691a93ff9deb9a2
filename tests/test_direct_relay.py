"""The relay's HTTP routes served straight from ASGI (faregate.edge.direct_relay) answer
exactly as Quart's view did: the same request sent both ways, over a real connection, gets
the same status, headers and body (request ids and times aside); an unexpected error is the
same JSON 500, and the table of paths the layer remembers is bounded. (App-wide hooks:
test_direct_relay_hooks.py.)"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_asyncio

from faregate.edge import direct_relay
from faregate.edge.direct_relay import DirectRelay
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "gpt-4o-mini"
CHAT = b'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'
STREAM = b'{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}'
#: what differs between two answers to the same request: ids, times
_VARYING = [
    (re.compile(rb"^date: .*$", re.M | re.I), b"date: D"),
    (re.compile(rb"(chatcmpl-|request id: |request-id: |x-request-id: |x-oneapi-request-id: )[A-Za-z0-9_-]+", re.I),
     rb"\1ID"),
    (re.compile(rb'"created":\d+'), b'"created":T'),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def key(module_gateway: GatewayServer, module_admin: AdminClient) -> AsyncIterator[str]:
    async with FakeOpenAI() as fake:
        await module_admin.add_channel(base_url=fake.base_url, models=MODEL)
        yield await module_admin.add_token(remain_quota=50_000_000)


def direct(gateway: GatewayServer) -> DirectRelay:
    layer = gateway.app.asgi_app.app  # inside TrustedProxies
    assert isinstance(layer, DirectRelay)
    return layer


@contextmanager
def through_quart(gateway: GatewayServer) -> Iterator[None]:
    """Every request goes to Quart's view, as before the layer."""
    layer = direct(gateway)
    on, known = layer._on, dict(layer.known)
    layer._on = False
    layer.known.clear()
    try:
        yield
    finally:
        layer._on = on
        layer.known.update(known)


async def exchange(gateway: GatewayServer, request: bytes, *, pause_before: int | None = None) -> bytes:
    """Send ``request`` on a new connection (the bytes after ``pause_before`` a moment later)
    and read the answer until the server closes."""
    url = urlsplit(gateway.base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        if pause_before is None:
            writer.write(request)
        else:
            writer.write(request[:pause_before])
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(request[pause_before:])
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


def normal(answer: bytes) -> bytes:
    for pattern, replacement in _VARYING:
        answer = pattern.sub(replacement, answer)
    return answer


def head(method: str, path: str, key: str | None, body: bytes = b"", extra: str = "") -> bytes:
    auth = f"Authorization: Bearer {key}\r\n" if key else ""
    length = f"Content-Length: {len(body)}\r\n" if method != "GET" and method != "HEAD" else ""
    return (f"{method} {path} HTTP/1.1\r\nHost: gateway\r\n{auth}Content-Type: application/json\r\n{length}{extra}"
            "Connection: close\r\n\r\n").encode() + body


def chunked(parts: list[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def cases(key: str) -> dict[str, tuple[bytes, int | None]]:
    """name: (request, where to pause)"""
    big = b'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"' + b"x" * 300_000 + b'"}]}'
    return {
        "chat": (head("POST", "/v1/chat/completions", key, CHAT), None),
        "chat, trailing slash": (head("POST", "/v1/chat/completions/", key, CHAT), None),
        "chat, query string": (head("POST", "/v1/chat/completions?x=1&y", key, CHAT), None),
        "chat, cookie": (head("POST", "/v1/chat/completions", key, CHAT, "Cookie: a=1; session=zz\r\n"), None),
        "chat, body later": (head("POST", "/v1/chat/completions", key, CHAT), -len(CHAT)),
        "chat, chunked body": (head("POST", "/v1/chat/completions", key, extra="Transfer-Encoding: chunked\r\n")
                               + chunked([CHAT[:20], CHAT[20:]]), None),
        "stream": (head("POST", "/v1/chat/completions", key, STREAM), None),
        "not JSON": (head("POST", "/v1/chat/completions", key, b'{"model":'), None),
        "no key": (head("POST", "/v1/chat/completions", None, CHAT), None),
        "no key, body later": (head("POST", "/v1/chat/completions", None, CHAT), -len(CHAT)),
        "no key, body never": (head("POST", "/v1/chat/completions", None, CHAT)[:-len(CHAT)], None),
        "model list": (head("GET", "/v1/models", key), None),
        "model list, HEAD": (head("HEAD", "/v1/models", key), None),
        "one model": (head("GET", f"/v1/models/{MODEL}", key), None),
        "wrong method": (head("GET", "/v1/chat/completions", key), None),
        "declared length over the cap": (head("POST", "/v1/chat/completions", key,
                                              extra=f"Content-Length: {200 * 1024 * 1024}\r\n"), None),
        "chunked body over the cap": (head("POST", "/v1/moderations", key, extra="Transfer-Encoding: chunked\r\n")
                                      + chunked([big[:150_000], big[150_000:]]), None),
    }


async def test_direct_answers_are_quarts(module_gateway: GatewayServer, key: str) -> None:
    gateway = module_gateway
    for name, (request, pause) in cases(key).items():
        if name == "no key, body never":  # the body never comes: read what is answered, then give up
            request = request.replace(b"Connection: close\r\n", b"")
        mine = normal(await exchange(gateway, request, pause_before=None if pause is None else len(request) + pause))
        with through_quart(gateway):
            quarts = normal(await exchange(gateway, request,
                                           pause_before=None if pause is None else len(request) + pause))
        assert mine.split(b"\r\n", 1)[0] == quarts.split(b"\r\n", 1)[0], name  # the status line
        assert sorted(_head_lines(mine)) == sorted(_head_lines(quarts)), name
        assert _body(mine) == _body(quarts), name
    # every POST case above was served by the layer (HEAD and the wrong method went to Quart)
    assert {path for _, path in direct(gateway).known} >= {"/v1/chat/completions", "/v1/chat/completions/",
                                                             "/v1/models", f"/v1/models/{MODEL}"}


def _head_lines(answer: bytes) -> list[bytes]:
    return [line.lower() for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]]


def _body(answer: bytes) -> bytes:
    return answer.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in answer else b""


async def test_an_unexpected_error_is_the_same_json_500(module_gateway: GatewayServer, key: str,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    async def broken(*_: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(direct_relay, "run_exchange", broken)
    monkeypatch.setattr("faregate.edge.routes.run_exchange", broken)
    request = head("POST", "/v1/chat/completions", key, CHAT)
    with caplog.at_level(logging.ERROR, logger="faregate"):
        mine = normal(await exchange(module_gateway, request))
        with through_quart(module_gateway):
            quarts = normal(await exchange(module_gateway, request))
    assert mine.startswith(b"HTTP/1.1 500") and sorted(_head_lines(mine)) == sorted(_head_lines(quarts))
    assert _body(mine) == _body(quarts) == (b'{"error":{"message":"internal error","type":"new_api_error",'
                                            b'"param":"","code":"internal_error"}}')
    lines = [r.getMessage() for r in caplog.records if r.name == "faregate"]
    assert lines.count("unhandled error on POST /v1/chat/completions") == 2  # each way logged it, with its traceback


async def test_the_remembered_paths_are_bounded(module_gateway: GatewayServer, key: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A client chooses the path of a model's route: past the bound, a path is matched each
    time, and still served by the layer."""
    layer = direct(module_gateway)
    layer.known.clear()
    monkeypatch.setattr(direct_relay, "MAX_KNOWN_PATHS", 2)
    served: list[str] = []
    real = direct_relay._Exchange.run

    async def counted(self: Any, receive: Any, send: Any) -> None:
        served.append(self.scope["path"])
        await real(self, receive, send)

    monkeypatch.setattr(direct_relay._Exchange, "run", counted)
    paths = [f"/v1/models/{name}" for name in ("a", "b", "c", MODEL)]
    for path in paths:
        answer = await exchange(module_gateway, head("GET", path, key))
        assert answer.startswith((b"HTTP/1.1 200", b"HTTP/1.1 404")), answer[:200]
    assert served == paths and len(layer.known) == 2


async def test_the_endpoint_sees_the_same_request(module_gateway: GatewayServer, key: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """What the driver is handed (the InboundRequest) is the same both ways: path, parameters,
    query, headers, client address, cookies, the body."""
    from faregate.edge import routes
    from faregate.exchange.exchange import Exchange

    seen: list[dict[str, Any]] = []

    class Recorded(Exchange):
        def __init__(self, gateway: Any, inbound: Any, fmt: Any) -> None:
            seen.append({"method": inbound.method, "path": inbound.path, "params": dict(inbound.path_params),
                         "query": list(inbound.query.items(multi=True)), "headers": list(inbound.headers.items()),
                         "client_ip": inbound.client_ip, "cookies": list(inbound.cookies.items(multi=True))
                         if inbound.cookies else [], "route": inbound.route, "format": fmt.name})
            super().__init__(gateway, inbound, fmt)

    monkeypatch.setattr(direct_relay, "Exchange", Recorded)
    monkeypatch.setattr(routes, "Exchange", Recorded)
    cookie = 'Cookie: a=1; b="two"\r\nX-Y: z\r\n'
    requests = [head("POST", "/v1/chat/completions?a=1&a=2&b=%20x&c", key, CHAT, cookie),
                head("GET", f"/v1/models/{MODEL}", key), head("GET", "/v1beta/models/gemini-x:countTokens", key)]
    for request in requests:
        await exchange(module_gateway, request)
        with through_quart(module_gateway):
            await exchange(module_gateway, request)
    assert len(seen) == 2 * len(requests)
    for mine, quarts in zip(seen[::2], seen[1::2], strict=True):
        assert mine == quarts
    assert seen[0]["query"] == [("a", "1"), ("a", "2"), ("b", " x"), ("c", "")]
    assert seen[0]["cookies"] == [("a", "1"), ("b", "two")] and ("X-Y", "z") in seen[0]["headers"]


async def test_a_short_stream_is_one_message_with_its_end(module_gateway: GatewayServer, key: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream the upstream sent whole (every event in the first read) goes to the server as
    the answer's start and one body message that ends it (the stream's LastChunk): Hypercorn
    then writes head, body and the chunked end at once (core/tests/test_h11_writes.py)."""
    messages: list[dict[str, Any]] = []
    real = direct_relay._Exchange.run

    async def recorded(self: Any, receive: Any, send: Any) -> None:
        async def spy(message: Any) -> None:
            messages.append(message)
            await send(message)

        await real(self, receive, spy)

    monkeypatch.setattr(direct_relay._Exchange, "run", recorded)
    answer = await exchange(module_gateway, head("POST", "/v1/chat/completions", key, STREAM))
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
    assert [m["type"] for m in messages] == ["http.response.start", "http.response.body"]
    assert messages[1]["more_body"] is False and messages[1]["body"].endswith(b"data: [DONE]\n\n")


async def test_a_body_sent_with_the_head_is_in_hand_when_the_exchange_reads_it(
        module_gateway: GatewayServer, key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No timer and no wait for a body that came with the request's head (the server queued it
    before the app ran); one that comes later is still awaited (its timer armed then)."""
    from faregate.exchange import admission

    seen: list[bool] = []
    real = admission.read_body

    async def spied(ex: Any) -> bytes:
        seen.append(ex.request.body_arrived())
        return await real(ex)

    monkeypatch.setattr(admission, "read_body", spied)
    request = head("POST", "/v1/chat/completions", key, CHAT)
    assert (await exchange(module_gateway, request)).startswith(b"HTTP/1.1 200")
    assert (await exchange(module_gateway, request, pause_before=len(request) - len(CHAT))).startswith(b"HTTP/1.1 200")
    assert seen == [True, False]


async def test_a_client_gone_before_the_view_is_not_served(module_gateway: GatewayServer, key: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A disconnect already queued when the app starts cancels the exchange at its first wait,
    as Quart's receiver would: nothing is relayed or charged, the log line says client_gone."""
    from faregate.edge.direct_relay import _Exchange

    outcomes: list[str] = []
    real, real_answer = _Exchange.run, _Exchange._answer

    async def gone_first(self: Any, receive: Any, send: Any) -> None:
        queue = receive.__self__
        while not queue.empty():  # the body never came: the client left after the head
            queue.get_nowait()
        queue.put_nowait({"type": "http.disconnect"})  # as Hypercorn queues it when the client leaves
        try:
            await real(self, receive, send)
        finally:
            outcomes.append("client_gone" if self.handling.client_gone else "served")

    async def answer(self: Any, *args: Any) -> None:
        outcomes.append(f"known gone at the start: {self.handling.client_gone}")
        await real_answer(self, *args)

    monkeypatch.setattr(_Exchange, "run", gone_first)
    monkeypatch.setattr(_Exchange, "_answer", answer)
    logs_before = len(await module_gateway.consume_logs())
    url = urlsplit(module_gateway.base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    writer.write(head("POST", "/v1/chat/completions", key, CHAT))
    await writer.drain()
    for _ in range(100):
        if len(outcomes) == 2:
            break
        await asyncio.sleep(0.02)
    writer.close()
    assert outcomes == ["known gone at the start: True", "client_gone"]
    assert len(await module_gateway.consume_logs()) == logs_before  # no consume row: nothing was charged
