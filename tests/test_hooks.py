"""One test per hook in ``faregate.hookspecs`` (``test_hook_<name>``; tests/test_docs.py
checks that none is missing), plus how the loader treats broken, misspelled and
blocked plugins.

Each test registers a small in-test plugin (an object with ``@hookimpl`` methods,
passed through ``load_plugins(extra=[...])``) and watches its effect on a running
gateway or on the plugin manager.
"""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import pytest_asyncio
from quart import Blueprint, current_app

from faregate import hookimpl, jsonutil
from faregate.billing.pricing import Price
from faregate.canonical import ChatRequest, ChatResponse, Message, TextPart, Usage
from faregate.contracts import (
    WEBSOCKET,
    AuthRequest,
    DbModels,
    InboundFormat,
    Provider,
    RequestSummary,
    Route,
    StorageBackend,
    StreamEncoder,
    StreamParser,
    UpstreamRequest,
    UpstreamTarget,
)
from faregate.contracts.inbound import InboundRequest, Outcome
from faregate.db import models as m
from faregate.db.storage import pick_backend
from faregate.errors import GatewayError, bad_request
from faregate.exchange.exchange import Exchange
from faregate.exchange.policies import EndpointDriver
from faregate.gateway import Gateway
from faregate.hooks import GatewayHooks
from faregate.plugins import load_plugins
from faregate.principals import Principal
from faregate.services import Services
from faregate.settings import Setting
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.tokens import estimator
from faregate_adapter_openai.testing import REPLY_PREFIX, Fault

ADAPTER = "faregate-adapter-openai"
MODEL = "gpt-4o-mini"
HI = [{"role": "user", "content": "hi"}]


# ---- a gateway with the OpenAI adapter, the given plugins and channels on fake_openai ----


@dataclass
class Served:
    server: GatewayServer
    admin: AdminClient
    client: openai.AsyncOpenAI
    channels: dict[str, int] = field(default_factory=dict)

    @property
    def gw(self) -> Any:
        return self.server.gateway

    async def chat(self, model: str = MODEL, **kwargs: Any) -> Any:
        return await self.client.chat.completions.create(model=model, messages=HI, **kwargs)

    async def logs(self) -> list[m.Log]:
        await self.gw.ledger.flush()
        return await m.Log.filter(type=m.LOG_CONSUME).order_by("id")


@pytest_asyncio.fixture
async def serve(make_gateway: Any, fake_openai: Any) -> AsyncIterator[Callable[..., Any]]:
    opened: list[Any] = []
    servers: list[GatewayServer] = []

    async def factory(*extra: Any, plugins: Any = None,
                      channels: tuple[dict[str, Any], ...] = ({"name": "main"},),
                      api_key: str | None = None) -> Served:
        server = await make_gateway(plugins=plugins or load_plugins(allow=[ADAPTER], extra=extra))
        servers.append(server)
        admin = AdminClient(server.base_url)
        opened.append(admin)
        await admin.setup_root()
        ids = {}
        for channel in channels:
            channel = {"base_url": fake_openai.base_url, "models": f"{MODEL},gpt-4o", **channel}
            ids[channel["name"]] = await admin.add_channel(**channel)
        key = api_key or await admin.add_token(remain_quota=5_000_000)
        client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key=key, max_retries=0)
        opened.append(client)
        return Served(server, admin, client, ids)

    yield factory
    for thing in opened:
        await thing.close()
    for server in servers:
        # Write pending logs now, so the ledger's background flush is idle when the
        # gateway stops: stopping cancels that task, and a cancel landing inside
        # tortoise's SQLite transaction entry leaks its lock (shutdown then hangs).
        await server.gateway.ledger.flush()


def sent_keys(fake_openai: Any) -> list[str]:
    """The upstream key of each request the fake received (tells the channels apart)."""
    return [r["headers"]["authorization"] for r in fake_openai.requests]


# ---- register_settings / startup / shutdown / register_routes ---------------------------


def test_hook_register_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class SettingsPlugin:
        __name__ = "hooktest-settings"

        @hookimpl
        def register_settings(self, register: Callable[[Setting], None]) -> None:
            register(Setting("hooktest_greeting", "hello", "What the plugin says."))
            register(Setting("hooktest_retries", 1, "How often it tries.", int))

    monkeypatch.setenv("FAREGATE_HOOKTEST_GREETING", "bonjour")
    monkeypatch.setenv("FAREGATE_HOOKTEST_RETRIES", "3")
    gw = Gateway(load_plugins(allow=[], extra=[SettingsPlugin()]), {"data_dir": str(tmp_path)})
    assert gw.settings.hooktest_greeting == "bonjour"
    assert gw.settings.hooktest_retries == 3  # parsed by the setting's ``parse``
    monkeypatch.delenv("FAREGATE_HOOKTEST_RETRIES")
    gw = Gateway(load_plugins(allow=[], extra=[SettingsPlugin()]), {"data_dir": str(tmp_path)})
    assert gw.settings.hooktest_retries == 1  # the default
    assert "hooktest_greeting" in [s.name for s in gw.settings.declared()]


async def test_hook_startup(make_gateway: Any) -> None:
    calls: list[Any] = []

    class SyncStartup:
        __name__ = "hooktest-startup-sync"

        @hookimpl
        def startup(self, app: Any, services: Services) -> None:
            calls.append(("sync", app.faregate is not None and services.user_by_name("nobody") is None))

    class AsyncStartup:
        __name__ = "hooktest-startup-async"

        @hookimpl
        async def startup(self, app: Any) -> None:
            await asyncio.sleep(0)
            calls.append(("async", await m.Option.all().count() >= 0))  # storage is ready

    class CallableStartup:
        __name__ = "hooktest-startup-callable"

        @hookimpl
        def startup(self) -> Callable[[], Any]:  # opt-in arguments: takes none
            async def later() -> None:
                calls.append(("callable", True))

            return later

    await make_gateway(plugins=load_plugins(allow=[], extra=[SyncStartup(), AsyncStartup(), CallableStartup()]))
    assert sorted(calls) == [("async", True), ("callable", True), ("sync", True)]


async def test_hook_shutdown(make_gateway: Any) -> None:
    calls: list[str] = []

    class SyncShutdown:
        __name__ = "hooktest-shutdown-sync"

        @hookimpl
        def shutdown(self, app: Any) -> None:
            calls.append("sync")

    class AsyncShutdown:
        __name__ = "hooktest-shutdown-async"

        @hookimpl
        async def shutdown(self, app: Any) -> None:
            await m.Option.all().count()  # storage is still open
            calls.append("async")

    class FailingShutdown:
        __name__ = "hooktest-shutdown-failing"

        @hookimpl
        async def shutdown(self) -> None:
            raise RuntimeError("cannot say goodbye")  # logged; the others still run

    server = await make_gateway(plugins=load_plugins(allow=[], extra=[SyncShutdown(), AsyncShutdown(),
                                                                      FailingShutdown()]))
    assert calls == []
    await server.stop()
    assert sorted(calls) == ["async", "sync"]


async def test_hook_register_routes(make_gateway: Any) -> None:
    blueprint = Blueprint("hooktest_routes", __name__)

    @blueprint.get("/hello/<name>")
    async def hello(name: str) -> dict[str, Any]:
        return {"hello": name, "formats": sorted(current_app.faregate.formats)}

    class RoutesPlugin:
        __name__ = "hooktest-routes"

        @hookimpl
        def register_routes(self, register: Callable[..., None]) -> None:
            register(blueprint, url_prefix="/hooktest")

    server = await make_gateway(plugins=load_plugins(allow=[ADAPTER], extra=[RoutesPlugin()]))
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        resp = await http.get("/hooktest/hello/world")
    assert resp.status_code == 200
    assert resp.json() == {"hello": "world", "formats": ["openai.chat", "openai.responses"]}


# ---- register_formats / register_providers --------------------------------------------


class PlainFormat(InboundFormat):
    """A made-up client format: ``POST /plain/generate`` with ``{"model", "prompt"}``,
    key in ``X-Plain-Key``, answer ``{"model", "text"}``, errors ``{"problem"}``.
    Regular responses only."""

    name = "hooktest.plain"

    def routes(self) -> list[Route]:
        return [Route("POST", "/plain/generate")]

    def api_key(self, request: InboundRequest) -> str | None:
        return request.headers.get("x-plain-key")

    def summarize(self, body: dict[str, Any], request: InboundRequest) -> RequestSummary:
        if not isinstance(body.get("model"), str) or not isinstance(body.get("prompt"), str):
            raise bad_request("model and prompt are required")
        return RequestSummary(model=body["model"], prompt_tokens=estimator.text(body["prompt"]))

    def parse(self, body: dict[str, Any], summary: RequestSummary) -> ChatRequest:
        return ChatRequest(model=summary.model, messages=[Message("user", [TextPart(body["prompt"])])])

    def render_response(self, response: ChatResponse, requested_model: str) -> dict[str, Any]:
        return {"model": requested_model, "text": response.message.text()}

    def stream_encoder(self, summary: RequestSummary, request_id: str) -> StreamEncoder:
        raise NotImplementedError("the plain format does not stream")

    def render_error(self, err: GatewayError, request_id: str) -> tuple[int, bytes]:
        return err.status, jsonutil.dumps({"problem": err.message})


async def test_hook_register_formats(serve: Any, fake_openai: Any) -> None:
    class FormatPlugin:
        __name__ = "hooktest-formats"

        @hookimpl
        def register_formats(self, register: Callable[[InboundFormat], None]) -> None:
            register(PlainFormat())

    served = await serve(FormatPlugin())
    key = served.client.api_key
    async with httpx.AsyncClient(base_url=served.server.base_url) as http:
        resp = await http.post("/plain/generate", json={"model": MODEL, "prompt": "hi"},
                               headers={"X-Plain-Key": key})
        assert resp.status_code == 200, resp.text
        assert resp.json() == {"model": MODEL, "text": REPLY_PREFIX + "hi"}
        # converted for the OpenAI channel through the canonical model
        assert fake_openai.requests[-1]["json"]["messages"] == [{"role": "user", "content": "hi"}]
        resp = await http.post("/plain/generate", json={"model": MODEL, "prompt": "hi"})
        assert resp.status_code == 401
        assert "problem" in resp.json()  # errors come back in the format's own shape


class MiniProvider(Provider):
    """Channel type 9002: a minimal OpenAI-speaking provider, regular responses only.
    ``native_format = None``, so even OpenAI clients go through the canonical model."""

    name = "hooktest-mini"
    channel_types = (9002,)

    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest:
        if target.stream:
            raise GatewayError(400, "mini channels do not stream", code="stream_unsupported")
        prompt = request.messages[-1].text()
        body = {"model": target.model, "messages": [{"role": "user", "content": "[mini] " + prompt}]}
        return UpstreamRequest("POST", target.base_url + "/v1/chat/completions",
                               {"Authorization": f"Bearer {target.key}", "Content-Type": "application/json"},
                               jsonutil.dumps(body))

    def parse_response(self, body: bytes) -> ChatResponse:
        reply = jsonutil.loads(body)
        usage = reply["usage"]
        return ChatResponse(id=reply["id"], model=reply["model"],
                            message=Message("assistant", [TextPart(reply["choices"][0]["message"]["content"])]),
                            usage=Usage(usage["prompt_tokens"], usage["completion_tokens"]))

    def stream_parser(self) -> StreamParser:
        raise NotImplementedError

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        return GatewayError(status, f"mini upstream answered {status}", upstream=True)


async def test_hook_register_providers(serve: Any, fake_openai: Any) -> None:
    provider = MiniProvider()

    class ProviderPlugin:
        __name__ = "hooktest-providers"

        @hookimpl
        def register_providers(self, register: Callable[[Provider], None]) -> None:
            register(provider)

    served = await serve(ProviderPlugin(), channels=({"name": "mini", "type": 9002},))
    assert served.gw.providers[9002] is provider
    reply = await served.chat()
    assert reply.choices[0].message.content == REPLY_PREFIX + "[mini] hi"
    assert reply.model == MODEL
    assert reply.usage is not None and reply.usage.prompt_tokens > 0
    (row,) = await served.logs()
    assert row.channel_id == served.channels["mini"]


# ---- the relay's policy objects ---------------------------------------------------------------


# ---- register_db_models / register_endpoint_drivers --------------------------------------


async def test_hook_register_db_models(make_gateway: Any) -> None:
    from tortoise import connections

    from faregate.testing.example_tables import APP, EXAMPLE_TABLES
    from faregate.testing.example_tables.models import ExampleOrder
    from faregate.testing.tables import pending_migrations

    class TablesPlugin:
        __name__ = "hooktest-tables"

        @hookimpl
        def register_db_models(self, register: Callable[[DbModels], None]) -> None:
            register(EXAMPLE_TABLES)
            register(DbModels(APP, "nosuch.models", "nosuch.migrations"))  # a duplicate label: ignored

    assert await pending_migrations(EXAMPLE_TABLES) == []  # the example's models match its migrations
    server = await make_gateway(plugins=load_plugins(allow=[], extra=[TablesPlugin()]))
    assert [t.app for t in server.gateway.db_models] == [APP]
    # the gateway migrated the plugin's tables at start, after the core's, on the same connection
    rows = await connections.get("default").execute_query_dict("SELECT app, name FROM tortoise_migrations ORDER BY id")
    assert [(r["app"], r["name"]) for r in rows][-2:] == [(APP, "0001_initial"), (APP, "0002_currency")]
    assert rows[0]["app"] == "faregate"
    order = await ExampleOrder.create(trade_no="T-9", user_id=1, amount=2**40)
    assert (await ExampleOrder.get(pk=order.pk)).currency == "USD"


class WhoAmIFormat(PlainFormat):
    """The plain format plus a route of a plugin's own kind, over HTTP and WebSocket."""

    name = "hooktest.whoami"

    def routes(self) -> list[Route]:
        return [Route("GET", "/whoami/{tag}", kind="whoami", options={"greeting": "hi"}),
                Route(WEBSOCKET, "/whoami/ws", kind="whoami")]


class WhoAmIDriver:
    """Kind ``whoami``: who the key belongs to. Over WebSocket, a metered echo session:
    admitted like any request, each message echoed, the session settled once at the end."""

    kind = "whoami"

    async def handle(self, ex: Exchange) -> Outcome:
        principal = await ex.authenticate()
        request = ex.request
        if request.websocket is None:
            if request.query.get("fail"):
                raise bad_request("asked to fail", param="fail")
            return ex.json({"user": principal.user.username, "tag": request.path_params["tag"],
                            "greeting": request.route.options["greeting"]})
        ex.begin(RequestSummary(model=request.query.get("model", MODEL), prompt_tokens=1), {}, b"")
        await ex.admit()
        peer = request.websocket
        await peer.accept()
        echoed = 0
        try:
            while True:
                message = await peer.receive()
                if message == "bye":
                    break
                echoed += 1
                await peer.send(f"{principal.user.username}: {message!s}")
        finally:
            ex.settle(Usage(input_tokens=echoed, output_tokens=echoed), end_reason="done")
        await peer.close()
        return Outcome()


async def test_hook_register_endpoint_drivers(serve: Any) -> None:
    import websockets

    class DriverPlugin:
        __name__ = "hooktest-drivers"

        @hookimpl
        def register_endpoint_drivers(self, register: Callable[[EndpointDriver], None]) -> None:
            register(WhoAmIDriver())

        @hookimpl
        def register_formats(self, register: Callable[[InboundFormat], None]) -> None:
            register(WhoAmIFormat())

    served = await serve(DriverPlugin())
    assert served.gw.drivers["whoami"].kind == "whoami"
    key = served.client.api_key
    async with httpx.AsyncClient(base_url=served.server.base_url) as http:
        resp = await http.get("/whoami/blue", headers={"X-Plain-Key": key})
        assert resp.status_code == 200, resp.text
        # path parameters and route options reach the driver
        assert resp.json() == {"user": "root", "tag": "blue", "greeting": "hi"}
        resp = await http.get("/whoami/blue?fail=1", headers={"X-Plain-Key": key})
        assert (resp.status_code, resp.json()["problem"]) == (400, "asked to fail")  # in the format's shape
        resp = await http.get("/whoami/blue")
        assert resp.status_code == 401

    ws_url = served.server.base_url.replace("http://", "ws://") + "/whoami/ws?model=" + MODEL
    async with websockets.connect(ws_url, additional_headers={"X-Plain-Key": key}) as ws:
        for text in ("one", "two"):
            await ws.send(text)
            assert await ws.recv() == f"root: {text}"
        await ws.send("bye")
    (row,) = await served.logs()  # the session settled once, billed and logged like a request
    assert (row.model_name, row.prompt_tokens, row.completion_tokens) == (MODEL, 2, 2)
    assert row.quota > 0
    # a bad key is refused before the upgrade completes, with the format's error
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(ws_url, additional_headers={"X-Plain-Key": "sk-wrong"}):
            pass
    assert refused.value.response.status_code == 401


async def test_hook_register_request_rewriters(serve: Any, fake_openai: Any) -> None:
    seen: list[str] = []

    class Upgrade:
        async def rewrite(self, ctx: Any) -> None:  # may be async
            seen.append(ctx.channel.name)
            if ctx.upstream_model == MODEL:
                ctx.upstream_model = "gpt-4o"

    class RewriterPlugin:
        __name__ = "hooktest-rewriters"

        @hookimpl
        def register_request_rewriters(self, register: Callable[[Any], None]) -> None:
            register(Upgrade())

    served = await serve(RewriterPlugin())
    await served.chat()
    assert seen == ["main"]  # runs after a channel is chosen
    assert fake_openai.requests[-1]["json"]["model"] == "gpt-4o"
    (row,) = await served.logs()
    assert row.model_name == MODEL  # billed as what the client asked for


async def test_hook_register_channel_filters(serve: Any, fake_openai: Any) -> None:
    seen: list[list[str]] = []

    class NoDrop:
        def filter(self, candidates: list[Any], ctx: Any) -> list[Any]:
            seen.append(sorted(c.name for c in candidates))
            return [c for c in candidates if c.name != "drop"]

    class FilterPlugin:
        __name__ = "hooktest-filters"

        @hookimpl
        def register_channel_filters(self, register: Callable[[Any], None]) -> None:
            register(NoDrop())

    served = await serve(FilterPlugin(), channels=({"name": "keep", "key": "sk-keep"},
                                                   {"name": "drop", "key": "sk-drop", "weight": 100}))
    for _ in range(4):
        await served.chat()
    assert seen == [["drop", "keep"]] * 4
    assert sent_keys(fake_openai) == ["Bearer sk-keep"] * 4


async def test_hook_register_channel_selectors(serve: Any, fake_openai: Any) -> None:
    class Favourite:
        def select(self, candidates: list[Any], ctx: Any) -> Any | None:
            return next((c for c in candidates if c.name == "favourite"), None)  # None: next selector

    class SelectorPlugin:
        __name__ = "hooktest-selectors"

        @hookimpl
        def register_channel_selectors(self, register: Callable[[Any], None]) -> None:
            register(Favourite())

    # the default (weighted random) would pick "other" about 11 times in 12
    served = await serve(SelectorPlugin(), channels=({"name": "favourite", "key": "sk-fav", "weight": 0},
                                                     {"name": "other", "key": "sk-other", "weight": 100}))
    for _ in range(4):
        await served.chat()
    assert sent_keys(fake_openai) == ["Bearer sk-fav"] * 4


async def test_hook_register_authenticators(serve: Any) -> None:
    class TeamKey:
        """Admits one shared team key as the root user (no per-key quota)."""

        kind = "api_key"

        def __init__(self, services: Services) -> None:
            self.services = services  # the plugins' door to the running gateway

        async def authenticate(self, req: AuthRequest) -> Principal | None:  # may be async
            if req.headers.get("authorization") != "Bearer team-secret":
                return None  # not ours: the next authenticator decides
            user = self.services.user_by_name("root")
            assert user is not None
            return Principal(user=user, group=user.group, via="api_key")

    class AuthPlugin:
        __name__ = "hooktest-authenticators"

        @hookimpl
        def register_authenticators(self, register: Callable[[Any], None], services: Services) -> None:
            register(TeamKey(services))

    served = await serve(AuthPlugin(), api_key="team-secret")
    reply = await served.chat()
    assert reply.choices[0].message.content == REPLY_PREFIX + "hi"
    (row,) = await served.logs()
    assert (row.username, row.token_id) == ("root", 0)
    # other keys still go to the core's API-key authenticator
    async with openai.AsyncOpenAI(base_url=served.server.base_url + "/v1", api_key="sk-nope",
                                  max_retries=0) as wrong:
        with pytest.raises(openai.AuthenticationError):
            await wrong.chat.completions.create(model=MODEL, messages=HI)


async def test_hook_register_quota_checks(serve: Any, fake_openai: Any) -> None:
    estimates: list[int] = []

    class Budget:
        async def check(self, ctx: Any, estimate: int) -> GatewayError | None:
            estimates.append(estimate)
            if ctx.model == "gpt-4o":
                return GatewayError(429, "the team's budget for gpt-4o is spent", type="insufficient_quota",
                                    code="team_budget")
            return None

    class QuotaPlugin:
        __name__ = "hooktest-quota"

        @hookimpl
        def register_quota_checks(self, register: Callable[[Any], None]) -> None:
            register(Budget())

    served = await serve(QuotaPlugin())
    await served.chat()
    with pytest.raises(openai.RateLimitError) as caught:
        await served.chat("gpt-4o")
    assert caught.value.status_code == 429
    assert caught.value.body["code"] == "team_budget"  # OpenAI's {"error": {...}} shape
    assert caught.value.body["type"] == "insufficient_quota"
    assert len(fake_openai.requests) == 1  # denied before any upstream call
    assert len(estimates) == 2 and all(e > 0 for e in estimates)
    assert [r.model_name for r in await served.logs()] == [MODEL]


async def test_hook_register_pricers(serve: Any) -> None:
    class FlatFee:
        def price(self, ctx: Any, usage: Usage | None) -> Price | None:
            if ctx.model == MODEL:
                return Price(model_price=0.01)  # $0.01 per call = 5,000 quota
            return None  # the next pricer (the core's ratios) decides

    class PricerPlugin:
        __name__ = "hooktest-pricers"

        @hookimpl
        def register_pricers(self, register: Callable[[Any], None]) -> None:
            register(FlatFee())

    served = await serve(PricerPlugin())
    await served.chat()
    await served.chat("gpt-4o")
    mini, big = await served.logs()
    assert mini.quota == 5_000
    assert big.model_name == "gpt-4o" and 0 < big.quota != 5_000


async def test_hook_register_usage_recorders(serve: Any) -> None:
    sync_seen: list[Any] = []
    async_seen: list[Any] = []

    class SyncRecorder:
        def record(self, entry: Any) -> None:
            sync_seen.append(entry)

    class AsyncRecorder:
        async def record(self, entry: Any) -> None:
            await asyncio.sleep(0)
            async_seen.append(entry)

    class BrokenRecorder:
        def record(self, entry: Any) -> None:
            raise RuntimeError("metrics backend down")  # logged, never reaches the client

    class RecorderPlugin:
        __name__ = "hooktest-recorders"

        @hookimpl
        def register_usage_recorders(self, register: Callable[[Any], None]) -> None:
            register(BrokenRecorder())
            register(SyncRecorder())
            register(AsyncRecorder())

    served = await serve(RecorderPlugin())
    await served.chat()
    (row,) = await served.logs()  # flushes: recorders run after the batch is written
    for seen in (sync_seen, async_seen):
        assert [(e.model_name, e.quota, e.request_id) for e in seen] == [(MODEL, row.quota, row.request_id)]


async def test_hook_register_exchange_observers(serve: Any) -> None:
    seen: list[Any] = []

    def broken(report: Any) -> None:
        raise RuntimeError("tracing backend down")  # logged, never reaches the client

    class ObserverPlugin:
        __name__ = "hooktest-observers"

        @hookimpl
        def register_exchange_observers(self, register: Callable[[Any], None]) -> None:
            register(broken)
            register(seen.append)

    served = await serve(ObserverPlugin())
    await served.chat()
    with pytest.raises(openai.APIStatusError):
        await served.chat(model="no-such-model")
    (row,) = await served.logs()
    ok, refused = seen
    assert (ok.model, ok.status, ok.attempts, ok.quota, ok.request_id) == (MODEL, 200, 1, row.quota, row.request_id)
    assert ok.channel_id == served.channels["main"] and ok.key_name and ok.input_tokens > 0
    assert 0 <= ok.overhead_seconds <= ok.seconds
    assert (refused.model, refused.attempts, refused.quota) == ("no-such-model", 0, 0)
    assert refused.status >= 400 and refused.route == "/v1/chat/completions"


async def test_hook_register_payment_providers(make_gateway: Any) -> None:
    """A provider declares its routes; the core serves them: the pay route stores an order bound
    to the provider and answers the checkout, the webhook completes that order once."""
    from decimal import Decimal

    from faregate.api import (
        Body,
        Checkout,
        PaymentEvent,
        PaymentProvider,
        PaymentRoutes,
        Quote,
        WebhookRejected,
    )

    class HookTestPay(Body):
        amount: int

    class FakePay(PaymentProvider):
        name = "fakepay"
        routes = PaymentRoutes(pay=("/api/user/fakepay/pay",), webhook=("/api/fakepay/webhook",),
                               pay_body=HookTestPay)

        def problem(self) -> str | None:
            return None

        def quote(self, ask: Any) -> Quote:
            return Quote(amount=ask.body.amount, money=Decimal(ask.body.amount), currency="USD",
                         quota=ask.body.amount * 1000, payment_method="fake")

        async def create_checkout(self, order: Any, ask: Any) -> Checkout:
            return Checkout({"pay_link": f"https://pay.example/{order.trade_no}"})

        async def verify_webhook(self, webhook: Any) -> PaymentEvent:
            if webhook.headers.get("x-fakepay-key") != "s3cret":
                raise WebhookRejected("bad key", status=401)
            body = jsonutil.loads(webhook.body)
            return PaymentEvent("paid", trade_no=body["trade_no"], money=Decimal(body["money"]), currency="USD")

    provider = FakePay()

    class PaymentPlugin:
        __name__ = "hooktest-payments"

        @hookimpl
        def register_payment_providers(self, register: Callable[[Any], None]) -> None:
            register(provider)
            register(FakePay())  # a duplicate name: the first registration wins

    server = await make_gateway(plugins=load_plugins(allow=[], extra=[PaymentPlugin()]))
    assert server.gateway.payment_providers == {"fakepay": provider}
    assert server.gateway.services.payment_provider("fakepay") is provider
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    answer = await admin.call("POST", "/api/user/fakepay/pay", json={"amount": 3})
    trade_no = answer["data"]["pay_link"].rsplit("/", 1)[1]
    assert answer == {"message": "success", "data": {"pay_link": f"https://pay.example/{trade_no}"}}
    row = await m.TopUp.get(trade_no=trade_no)
    assert (row.payment_provider, row.status, row.quota, row.currency) == ("fakepay", "pending", 3000, "USD")
    before = (await m.User.get(id=admin.user_id)).quota
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        paid = {"trade_no": trade_no, "money": "3"}
        assert (await http.post("/api/fakepay/webhook", json=paid)).status_code == 401
        for _ in range(2):
            resp = await http.post("/api/fakepay/webhook", json=paid, headers={"x-fakepay-key": "s3cret"})
            assert resp.json() == {"success": True, "message": ""}
    assert (await m.User.get(id=admin.user_id)).quota == before + 3000
    await admin.close()


async def test_hook_register_second_factors(make_gateway: Any) -> None:
    class PinFactor:
        method = "2fa"

        def __init__(self) -> None:
            self.pins: dict[int, str] = {}

        async def enrolled(self, user_id: int) -> bool:
            return user_id in self.pins

        def verify(self, user_id: int, code: str, session: Any) -> bool:
            session["pin_checked"] = True  # the session is the login session: it persists
            return self.pins.get(user_id) == code

        def reset(self, user_id: int) -> bool:
            return self.pins.pop(user_id, None) is not None

    factor = PinFactor()

    class FactorPlugin:
        __name__ = "hooktest-factor"

        @hookimpl
        def register_second_factors(self, register: Callable[[Any], None], services: Services) -> None:
            register(factor)
            register(PinFactor())  # a duplicate method: the first registration wins

    server = await make_gateway(plugins=load_plugins(allow=[], extra=[FactorPlugin()]))
    assert server.gateway.second_factors == {"2fa": factor}
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    assert admin.user_id is not None
    factor.pins[admin.user_id] = "2468"
    assert (await admin.call("POST", "/api/verify", json={"method": "2fa", "code": "1357"}))["success"] is False
    assert (await admin.ok("POST", "/api/verify", json={"method": "2fa", "code": "2468"}))["verified"] is True
    await admin.close()


async def test_hook_register_notifiers(make_gateway: Any) -> None:
    sent: list[tuple[int, str, str]] = []

    class Pager:
        kind = "bark"

        async def send(self, target: Any, note: Any) -> None:
            sent.append((target.user_id, target.settings["bark_url"], note.text()))

    pager = Pager()

    class NotifierPlugin:
        __name__ = "hooktest-notifier"

        @hookimpl
        def register_notifiers(self, register: Callable[[Any], None], services: Services) -> None:
            register(pager)
            register(Pager())  # a duplicate kind: the first registration wins

    server = await make_gateway(plugins=load_plugins(allow=[], extra=[NotifierPlugin()]))
    gw = server.gateway
    assert gw.notifiers["bark"] is pager and gw.notifiers["webhook"].kind == "webhook"  # the core's comes last
    user = await m.User.create(username="paged", quota=10, setting=jsonutil.dumps_str(
        {"notify_type": "bark", "quota_warning_threshold": 1000, "bark_url": "https://bark.example/k"}))
    assert await gw.quota_warnings.check([user.id]) == [user.id]
    await asyncio.sleep(0.05)  # the send is a background task
    assert len(sent) == 1 and sent[0][:2] == (user.id, "https://bark.example/k") and "$0.000020" in sent[0][2]
    assert await gw.quota_warnings.check([user.id]) == []  # once, until the quota rises above again


async def test_hook_register_token_counters(serve: Any, fake_openai: Any, tmp_path: Path) -> None:
    class Words:
        name = "words"

        def count(self, text: str) -> int:
            return len(text.split())

    class WordCounter:
        def tokenizer(self, model: str) -> Any:
            return Words() if model == MODEL else None  # None: the next counter's, in the end the rule

    class KnowsNothing:
        def tokenizer(self, model: str) -> Any:
            return None

    class CounterPlugin:
        __name__ = "hooktest-counters"

        @hookimpl
        def register_token_counters(self, register: Callable[[Any], None], services: Services) -> None:
            register(KnowsNothing())
            register(WordCounter())

    # kept per gateway: one built in this process without the plugin has no counter
    assert Gateway(load_plugins(allow=[ADAPTER]), {"data_dir": str(tmp_path)}).token_counters == []
    served = await serve(CounterPlugin())
    assert served.gw.tokenizer("gpt-4o") is None and served.gw.tokenizer(MODEL).name == "words"
    key = await served.admin.add_token(remain_quota=5_000_000)
    text = "a prompt of five words"
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))  # the stream ends before its usage
    async with httpx.AsyncClient(base_url=served.server.base_url) as http:
        resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                               json={"model": MODEL, "stream": True, "messages": [{"role": "user", "content": text}]})
    assert resp.status_code == 200
    (row,) = await served.logs()
    other = jsonutil.loads(row.other)
    assert (other["usage_source"], other["token_counter"]) == ("estimated", "words")
    assert row.prompt_tokens == estimator.MESSAGE_OVERHEAD + 5 != estimator.MESSAGE_OVERHEAD + estimator.text(text)


class AliasSQLite(StorageBackend):
    """SQLite under another URL scheme: enough to show how a backend is chosen."""

    def tortoise_connection(self, url: str) -> dict[str, Any]:
        return {"engine": "tortoise.backends.sqlite", "credentials": {"file_path": url.split("://", 1)[1]}}


async def test_hook_register_storage_backends(make_gateway: Any, tmp_path: Path) -> None:
    backend = AliasSQLite(name="hooktest-lite", schemes=("hooktest-lite",), description="SQLite, renamed")

    class StoragePlugin:
        __name__ = "hooktest-storage"

        @hookimpl
        def register_storage_backends(self, register: Callable[[StorageBackend], None]) -> None:
            register(backend)

    plugins = load_plugins(allow=[], extra=[StoragePlugin()])
    backends = GatewayHooks(plugins.pm).storage_backends()
    assert pick_backend("hooktest-lite:///tmp/x.db", backends) is backend
    assert pick_backend("sqlite:///tmp/x.db", backends).name == "sqlite"  # the core's default is still there
    with pytest.raises(GatewayError, match="no storage plugin"):
        pick_backend("nosuch://x", backends)

    db_file = tmp_path / "alias.db"
    server = await make_gateway(plugins=plugins, db_url=f"hooktest-lite://{db_file}")
    assert server.gateway.backend is backend
    assert db_file.exists()


# ---- loading: broken, misspelled and blocked plugins ------------------------------------


@pytest.fixture
def broken_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An installed-looking distribution whose entry point raises on import."""
    site = tmp_path / "site"
    info = site / "faregate_hooktest_broken-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: faregate-hooktest-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[faregate]\nfaregate-hooktest-broken = faregate_hooktest_broken\n")
    (site / "faregate_hooktest_broken.py").write_text(textwrap.dedent("""\
        raise RuntimeError("boom at import")
    """))
    monkeypatch.syspath_prepend(str(site))  # also invalidates importlib's caches
    return "faregate-hooktest-broken"


async def test_broken_plugin_is_reported_and_the_gateway_serves(
        serve: Any, broken_distribution: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plugins = load_plugins(allow=[ADAPTER, broken_distribution])
    report = {r.name: r for r in plugins.reports}[broken_distribution]
    assert report.error == "RuntimeError: boom at import"
    assert report.version == "0.1"

    monkeypatch.setenv("FAREGATE_STRICT_PLUGINS", "1")
    with pytest.raises(RuntimeError, match="boom at import"):
        load_plugins(allow=[ADAPTER, broken_distribution])
    monkeypatch.delenv("FAREGATE_STRICT_PLUGINS")

    # served: the error is listed for admins and the relay still works
    served = await serve(plugins=plugins)
    listed = {p["name"]: p for p in await served.admin.ok("GET", "/api/plugins")}
    assert listed[broken_distribution]["error"] == "RuntimeError: boom at import"
    assert listed[ADAPTER]["error"] is None
    reply = await served.chat()
    assert reply.choices[0].message.content == REPLY_PREFIX + "hi"


async def test_misspelled_hook_is_reported_not_fatal(make_gateway: Any) -> None:
    class Typo:
        __name__ = "hooktest-typo"

        @hookimpl
        def register_provider(self, register: Callable[[Provider], None]) -> None:  # missing "s"
            raise AssertionError("never called")

    plugins = load_plugins(allow=[ADAPTER], extra=[Typo()])
    report = {r.name: r for r in plugins.reports}["hooktest-typo"]
    assert report.error is not None and "register_provider" in report.error
    assert not plugins.pm.has_plugin("hooktest-typo")  # dropped, so never half-loaded

    server = await make_gateway(plugins=plugins)
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    listed = {p["name"]: p for p in await admin.ok("GET", "/api/plugins")}
    await admin.close()
    assert "register_provider" in listed["hooktest-typo"]["error"]
    assert "openai.chat" in server.gateway.formats


async def test_blocking_the_openai_adapter_removes_chat_completions(
        make_gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAREGATE_PLUGINS", raising=False)
    monkeypatch.setenv("FAREGATE_DISABLED_PLUGINS", ADAPTER)
    assert ADAPTER not in [r.name for r in load_plugins().reports]  # the environment's block list

    plugins = load_plugins(block=[ADAPTER])
    assert ADAPTER not in [r.name for r in plugins.reports]
    server = await make_gateway(plugins=plugins)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        resp = await http.post("/v1/chat/completions", json={"model": MODEL, "messages": HI})
        assert resp.status_code == 404
        assert resp.json()["error"]["type"] == "invalid_request_error"
        assert (await http.get("/api/status")).status_code == 200  # the rest still serves
