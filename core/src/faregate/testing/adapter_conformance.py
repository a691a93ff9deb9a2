"""The adapter conformance suites: what every channel adapter and every inbound format
must do, re-run by each plugin against its own fake upstream (as the storage plugins
re-run :mod:`faregate.testing.conformance`).

A channel adapter (a ``Provider``)::

    import pytest_asyncio
    from faregate.testing.adapter_conformance import AdapterConformance

    class TestShout(AdapterConformance):
        plugins = ["faregate-adapter-openai", "faregate-adapter-shout"]  # client format + yours
        channel_type = 9100
        model = "shout-1"

        @pytest_asyncio.fixture
        async def upstream(self):
            async with FakeShout(key="k") as fake:  # has base_url, key, requests, fail_next
                yield fake

An inbound format: subclass :class:`FormatConformance` the same way and say how a
minimal request of yours looks (``chat_request``), where its key goes
(``auth_headers``) and how to read your error shape (``error_message``).

The client side of :class:`AdapterConformance` is the official ``openai`` SDK, so the
OpenAI adapter must be in ``plugins``. Each test runs a real gateway (SQLite in a
temporary directory) with the given plugin set.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import httpx
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faregate import jsonutil
from faregate.contracts import InboundFormat, Provider, UpstreamTarget
from faregate.db import models as m
from faregate.errors import GatewayError
from faregate.gateway import Gateway
from faregate.plugins import PluginSet, load_plugins
from faregate.testing.harness import AdminClient, GatewayServer

__all__ = ["AdapterConformance", "FakeUpstream", "FormatConformance"]

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
    max_leaves=30,
)


class FakeUpstream(Protocol):
    """What the suites need of a plugin's fake provider server."""

    @property
    def base_url(self) -> str: ...

    #: the channel key the fake accepts
    key: str
    #: every request it received: dicts with at least ``path``, ``headers`` (lower-case
    #: names), ``json``
    requests: list[dict[str, Any]]

    def fail_next(self, status: int, message: str) -> None:
        """Answer the next request with ``status`` and ``message`` in the vendor's error shape."""


@dataclass
class Deployment:
    server: GatewayServer
    admin: AdminClient
    key: str
    channels: list[int]

    async def consume_logs(self) -> list[m.Log]:
        await self.server.gateway.ledger.flush()
        return await m.Log.filter(type=m.LOG_CONSUME).order_by("id")

    async def error_logs(self) -> list[m.Log]:
        await self.server.gateway.ledger.flush()
        return await m.Log.filter(type=m.LOG_ERROR).order_by("id")

    async def used_quota(self) -> int:
        """What the root user was charged so far (settled charges only)."""
        await self.server.gateway.ledger.flush()
        return int((await m.User.get(username="root")).used_quota)


class _Deploys:
    #: entry-point names of the installed plugins the gateway runs with
    plugins: ClassVar[list[str]]
    #: plugin objects registered besides them (an in-test provider, say)
    extra_plugins: ClassVar[list[object]] = []
    channel_type: ClassVar[int]
    model: ClassVar[str]
    #: more of the channel's fields, for a vendor whose key needs them (``{"other": "us-east-1"}``
    #: for a region, ``{"setting": {...}}``)
    channel_fields: ClassVar[dict[str, Any]] = {}

    def plugin_set(self) -> PluginSet:
        return load_plugins(allow=list(self.plugins), extra=list(self.extra_plugins))

    def registered(self, hook: str, data_dir: Any) -> list[Any]:
        plugins = self.plugin_set()
        found: list[Any] = []
        services = Gateway(plugins, {"data_dir": str(data_dir)}).services
        getattr(plugins.pm.hook, hook)(register=found.append, services=services)
        return found

    @pytest_asyncio.fixture
    async def deploy(self, upstream: FakeUpstream,
                     make_gateway: Callable[..., Awaitable[GatewayServer]]) -> AsyncIterator[
                         Callable[..., Awaitable[Deployment]]]:
        opened: list[AdminClient] = []

        async def factory(channels: int = 1, options: dict[str, Any] | None = None,
                          settings: dict[str, Any] | None = None) -> Deployment:
            server = await make_gateway(plugins=self.plugin_set(), settings=settings)
            admin = AdminClient(server.base_url)
            opened.append(admin)
            await admin.setup_root()
            await admin.set_option("ModelRatio", {self.model: 1.0})  # priced, whatever the core's table knows
            for name, value in (options or {}).items():
                await admin.set_option(name, value)
            ids = [await admin.add_channel(type=self.channel_type, base_url=upstream.base_url, key=upstream.key,
                                           models=self.model, name=f"conformance-{i}", **self.channel_fields)
                   for i in range(channels)]
            key = await admin.add_token(remain_quota=50_000_000)
            return Deployment(server, admin, key, ids)

        yield factory
        for admin in opened:
            await admin.close()


class AdapterConformance(_Deploys):
    """Subclass as ``Test<Vendor>``; set ``plugins``, ``channel_type``, ``model`` and
    provide the async ``upstream`` fixture (a :class:`FakeUpstream`)."""

    #: whether the vendor streams (the stream tests run only then)
    streams: ClassVar[bool] = True
    #: whether the vendor lists its models
    lists_models: ClassVar[bool] = True

    @pytest.fixture
    def provider(self, tmp_path: Any) -> Provider:
        for provider in self.registered("register_providers", tmp_path):
            if self.channel_type in provider.channel_types:
                return provider  # type: ignore[no-any-return]
        raise AssertionError(f"no plugin of {self.plugins} registers channel type {self.channel_type}")

    def client(self, deployment: Deployment) -> Any:
        import openai

        return openai.AsyncOpenAI(base_url=deployment.server.base_url + "/v1", api_key=deployment.key,
                                  max_retries=0)

    # ---- through a running gateway ------------------------------------------------------
    async def test_regular_reply_is_converted_and_billed(self, deploy: Any, upstream: FakeUpstream) -> None:
        deployment = await deploy()
        async with self.client(deployment) as client:
            reply = await client.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": "say something back"}], max_tokens=64)
        assert reply.choices[0].message.content, "the upstream's text reaches the client"
        assert reply.usage is not None and reply.usage.prompt_tokens > 0
        (sent,) = upstream.requests
        assert _carries(sent, upstream.key), "the channel key goes upstream"
        (row,) = await deployment.consume_logs()
        assert (row.model_name, row.channel_id) == (self.model, deployment.channels[0])
        assert row.quota > 0 and row.prompt_tokens == reply.usage.prompt_tokens

    async def test_stream_reply_is_converted_and_billed(self, deploy: Any) -> None:
        if not self.streams:
            pytest.skip("this vendor does not stream")
        deployment = await deploy()
        async with self.client(deployment) as client:
            stream = await client.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": "stream something back"}], max_tokens=64,
                stream=True, stream_options={"include_usage": True})
            text, usage = "", None
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    text += chunk.choices[0].delta.content
                usage = chunk.usage or usage
        assert text and usage is not None and usage.completion_tokens > 0
        (row,) = await deployment.consume_logs()
        assert row.is_stream and row.completion_tokens == usage.completion_tokens

    async def test_upstream_error_reaches_the_client_and_charges_nothing(self, deploy: Any,
                                                                         upstream: FakeUpstream) -> None:
        import openai

        deployment = await deploy()
        upstream.fail_next(400, "the vendor did not like that")
        async with self.client(deployment) as client:
            with pytest.raises(openai.BadRequestError):
                await client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": "x"}])
        assert await deployment.consume_logs() == []
        assert len(await deployment.error_logs()) == 1
        assert await deployment.used_quota() == 0

    async def test_server_error_fails_over_to_another_channel(self, deploy: Any, upstream: FakeUpstream) -> None:
        deployment = await deploy(channels=2, options={"RetryTimes": "1"})
        upstream.fail_next(500, "the vendor fell over")
        async with self.client(deployment) as client:
            reply = await client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": "x"}])
        assert reply.choices[0].message.content
        assert len(upstream.requests) == 2
        (row,) = await deployment.consume_logs()
        assert len(jsonutil.loads(row.other)["admin_info"]["use_channel"]) == 2

    async def test_model_list(self, provider: Provider, upstream: FakeUpstream) -> None:
        request = provider.models_request(self.target(provider, upstream))
        if not self.lists_models:
            assert request is None
            return
        assert request is not None
        async with httpx.AsyncClient() as http:
            resp = await http.request(request.method, request.url, headers=request.headers, content=request.body)
        assert resp.status_code == 200, resp.text
        assert self.model in provider.parse_models(resp.content)

    # ---- the provider's pure functions ---------------------------------------------------
    def target(self, provider: Provider, upstream: FakeUpstream, *, stream: bool = False) -> UpstreamTarget:
        setting = self.channel_fields.get("setting")
        return UpstreamTarget(base_url=upstream.base_url, key=upstream.key, model=self.model, stream=stream,
                              channel_type=self.channel_type, other=str(self.channel_fields.get("other", "")),
                              settings=setting if isinstance(setting, dict) else {})

    @pytest.mark.parametrize("body", [b"", b"not json", b"[]", b"{}", b'{"choices": 7}', b"\xff\xfe"])
    def test_malformed_answer_is_a_502(self, provider: Provider, body: bytes) -> None:
        with pytest.raises(GatewayError) as caught:
            provider.parse_response(body)
        assert (caught.value.status, caught.value.code, caught.value.upstream) == (502, "bad_response_body", True)

    # every subclass runs these inherited methods (differing executors); the examples use
    # only the provider fixture, which keeps no state between them
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                    HealthCheck.differing_executors])
    @given(value=JSON_VALUES)
    def test_any_json_answer_parses_or_is_a_502(self, provider: Provider, value: Any) -> None:
        with contextlib.suppress(GatewayError):
            provider.parse_response(jsonutil.dumps(value))

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                    HealthCheck.differing_executors])
    @given(value=JSON_VALUES, event=st.sampled_from([None, "message", "content_block_delta", "error"]))
    def test_stream_events_parse_or_raise_value_errors(self, provider: Provider, value: Any,
                                                        event: str | None) -> None:
        """A malformed event may raise what the core turns into an in-band
        ``bad_response_body`` (``ValueError``, ``TypeError``, ``KeyError``,
        ``AttributeError``, ``GatewayError``), never anything else."""
        if not self.streams:
            return
        parser = provider.stream_parser()
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError, GatewayError):
            parser.feed(event, jsonutil.dumps(value))

    @pytest.mark.parametrize("status", [400, 401, 403, 404, 429, 500, 502, 503])
    def test_errors_are_classified_and_redacted(self, provider: Provider, status: int) -> None:
        secret = "sk-" + "S3cr3t" * 6
        body = jsonutil.dumps({"error": {"message": f"bad key {secret}", "type": "x", "code": "y"}})
        err = provider.parse_error(status, body)
        assert isinstance(err, GatewayError) and err.upstream
        assert secret not in err.message
        garbage = provider.parse_error(status, b"<html>\xff</html>")
        assert isinstance(garbage, GatewayError) and garbage.message

    def test_requests_go_under_the_base_url(self, provider: Provider, upstream: FakeUpstream) -> None:
        from faregate.canonical import ChatRequest, Message, TextPart

        base = upstream.base_url + "/some/prefix"
        target = self.target(provider, upstream)
        target.base_url = base
        request = provider.build_request(ChatRequest(model=self.model, messages=[
            Message("user", [TextPart("hi")])]), target)
        assert request.url.startswith(base + "/")
        assert "//" not in request.url.split("://", 1)[1], "no doubled slashes"


def _carries(sent: dict[str, Any], key: str) -> bool:
    return any(key in str(value) for value in sent.get("headers", {}).values()) or key in str(sent.get("query", ""))


class FormatConformance(_Deploys):
    """Subclass as ``Test<Format>``; set ``plugins``, ``format_name``, ``channel_type``
    and ``model`` (a channel the suite can relay to), provide the ``upstream`` fixture,
    and override the three methods below for your wire format."""

    format_name: ClassVar[str]

    def chat_request(self, model: str) -> dict[str, Any]:
        """A minimal valid request body of this format."""
        raise NotImplementedError

    def chat_path(self, model: str) -> str:
        """Where it is posted (default: the format's first POST route of kind ``chat``)."""
        raise NotImplementedError

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def error_message(self, body: Any) -> str:
        """The message of an error body in this format (fail the test if it is not one)."""
        return str(body["error"]["message"])

    @pytest.fixture
    def fmt(self, tmp_path: Any) -> InboundFormat:
        for fmt in self.registered("register_formats", tmp_path):
            if fmt.name == self.format_name:
                return fmt  # type: ignore[no-any-return]
        raise AssertionError(f"no plugin of {self.plugins} registers format {self.format_name}")

    def _path(self, fmt: InboundFormat) -> str:
        with contextlib.suppress(NotImplementedError):
            return self.chat_path(self.model)
        for route in fmt.routes():
            if route.kind == "chat" and route.method == "POST":
                return route.path
        raise AssertionError("the format has no POST route of kind chat: override chat_path")

    async def _post(self, deployment: Deployment, fmt: InboundFormat, *, content: bytes,
                    headers: dict[str, str] | None = None) -> httpx.Response:
        async with httpx.AsyncClient(base_url=deployment.server.base_url, timeout=30) as http:
            hdrs = {"Content-Type": "application/json", **self.auth_headers(deployment.key), **(headers or {})}
            return await http.post(self._path(fmt), content=content, headers=hdrs)

    def assert_error(self, resp: httpx.Response, status: int | tuple[int, ...]) -> str:
        statuses = status if isinstance(status, tuple) else (status,)
        assert resp.status_code in statuses, (resp.status_code, resp.text)
        assert resp.headers["content-type"].startswith("application/json")
        request_id = resp.headers.get("x-oneapi-request-id")
        assert request_id, "every answer names its request id"
        assert resp.headers.get("x-request-id") == resp.headers.get("request-id") == request_id, \
            "the SDKs read the request id as x-request-id (OpenAI) and request-id (Anthropic)"
        message = self.error_message(resp.json())
        assert message
        return message

    async def test_routes_have_drivers(self, deploy: Any, fmt: InboundFormat) -> None:
        deployment = await deploy()
        drivers = deployment.server.gateway.drivers
        assert [r.kind for r in fmt.routes() if r.kind not in drivers] == []

    async def test_a_valid_request_is_relayed_and_billed(self, deploy: Any, fmt: InboundFormat) -> None:
        deployment = await deploy()
        resp = await self._post(deployment, fmt, content=jsonutil.dumps(self.chat_request(self.model)))
        assert resp.status_code == 200, resp.text
        (row,) = await deployment.consume_logs()
        assert row.model_name == self.model and row.quota > 0

    @pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'"text"', b"", b"\xff\xfe\x00"])
    async def test_malformed_bodies_are_400_in_the_format(self, deploy: Any, fmt: InboundFormat,
                                                          content: bytes) -> None:
        deployment = await deploy()
        self.assert_error(await self._post(deployment, fmt, content=content), 400)

    async def test_wrong_shapes_are_400_in_the_format(self, deploy: Any, fmt: InboundFormat) -> None:
        deployment = await deploy()
        valid = self.chat_request(self.model)
        for name in list(valid):
            bad: Any
            for bad in (None, 12345, [], {"x": [1]}):
                body = {**valid, name: bad}
                resp = await self._post(deployment, fmt, content=jsonutil.dumps(body))
                assert resp.status_code < 500, (name, bad, resp.status_code, resp.text)
                if resp.status_code != 200:
                    self.assert_error(resp, resp.status_code)
        assert await m.Log.filter(type=m.LOG_CONSUME, quota__lt=0).count() == 0

    async def test_missing_or_wrong_key_is_401_in_the_format(self, deploy: Any, fmt: InboundFormat) -> None:
        deployment = await deploy()
        body = jsonutil.dumps(self.chat_request(self.model))
        async with httpx.AsyncClient(base_url=deployment.server.base_url) as http:
            resp = await http.post(self._path(fmt), content=body, headers={"Content-Type": "application/json"})
        self.assert_error(resp, 401)
        wrong = {name: "sk-wrong" for name in self.auth_headers("x")}
        if "Authorization" in wrong:
            wrong["Authorization"] = "Bearer sk-wrong"
        async with httpx.AsyncClient(base_url=deployment.server.base_url) as http:
            resp = await http.post(self._path(fmt), content=body, headers={"Content-Type": "application/json",
                                                                           **wrong})
        self.assert_error(resp, 401)

    async def test_oversized_body_is_413_in_the_format(self, deploy: Any, fmt: InboundFormat) -> None:
        deployment = await deploy(settings={"max_body_mb": 0.01})  # small: the body fits in socket buffers
        limit = int(deployment.server.gateway.settings.max_body_mb * 1024 * 1024)
        self.assert_error(await self._post(deployment, fmt, content=b" " * (limit + 1)), 413)

    async def test_unknown_model_is_refused_in_the_format(self, deploy: Any, fmt: InboundFormat,
                                                          upstream: FakeUpstream) -> None:
        deployment = await deploy()
        content = jsonutil.dumps(self.chat_request("no-such-model-anywhere"))
        with contextlib.suppress(NotImplementedError):
            # formats that carry the model in the path
            path = self.chat_path("no-such-model-anywhere")
            async with httpx.AsyncClient(base_url=deployment.server.base_url) as http:
                resp = await http.post(path, content=content, headers={"Content-Type": "application/json",
                                                                       **self.auth_headers(deployment.key)})
            self.assert_error(resp, 404)
            assert resp.headers.get("x-should-retry") == "false", "a final answer: the SDKs must not retry"
            return
        resp = await self._post(deployment, fmt, content=content)
        self.assert_error(resp, 404)
        assert resp.headers.get("x-should-retry") == "false", "a final answer: the SDKs must not retry"
        assert upstream.requests == []

    @pytest.mark.parametrize("status", [400, 401, 403, 404, 408, 413, 429, 500, 502, 503])
    def test_every_error_renders(self, fmt: InboundFormat, status: int) -> None:
        err = GatewayError(status, "something <b>went</b> \"wrong\" ✓", code="conformance")
        rendered_status, body = fmt.render_error(err, "req-1")
        assert 400 <= rendered_status < 600
        assert self.error_message(jsonutil.loads(body))
