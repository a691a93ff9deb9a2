"""A real gateway with the plugin (through its entry point) and the OpenAI adapter on the fake
OpenAI upstream, spoken to with the official ``openai`` SDK; spans land in memory."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import openai
import pytest
import pytest_asyncio
from opentelemetry.trace import StatusCode

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_otel.tracing import ExchangeTracer

from .conftest import Exported

PLUGINS = ["faregate-adapter-openai", "faregate-otel"]
MODEL = "gpt-4o-mini"
HI = [{"role": "user", "content": "hi"}]
KEY_NAME = "otel-test-key"


@dataclass
class Served:
    server: GatewayServer
    admin: AdminClient
    client: Any  # openai.AsyncOpenAI, typed Any: the tests send plain dicts
    key: str
    channel_id: int
    exported: Exported

    def tracers(self) -> list[ExchangeTracer]:
        return [o for o in self.server.gateway.observers if isinstance(o, ExchangeTracer)]

    async def spans(self, count: int) -> list[Any]:
        """The spans exported once ``count`` exchanges were traced (the observer may run just
        after the client has its answer), oldest first."""
        (tracer,) = self.tracers()
        found: list[Any] = []
        for _ in range(100):
            await asyncio.to_thread(tracer.force_flush)
            found = list(self.exported.exporter.get_finished_spans())
            if len(found) >= count:
                break
            await asyncio.sleep(0.02)
        assert len(found) == count, [s.name for s in found]
        return found


@pytest_asyncio.fixture
async def serve(make_gateway: Callable[..., Awaitable[GatewayServer]],
                fake_openai: Any) -> AsyncIterator[Callable[..., Awaitable[Served]]]:
    opened: list[Any] = []
    servers: list[GatewayServer] = []

    async def factory(exported: Exported, **settings: Any) -> Served:
        server = await make_gateway(plugins=PLUGINS, settings=settings)
        servers.append(server)
        admin = AdminClient(server.base_url)
        opened.append(admin)
        await admin.setup_root()
        channel_id = await admin.add_channel(base_url=fake_openai.base_url, models=f"{MODEL},gpt-4o", name="main")
        key = await admin.add_token(remain_quota=5_000_000, name=KEY_NAME)
        client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key=key, max_retries=0)
        opened.append(client)
        return Served(server, admin, client, key, channel_id, exported)

    yield factory
    for thing in opened:
        await thing.close()
    for server in servers:
        # pending log rows written now, so stopping does not cancel the ledger mid-transaction
        await server.gateway.ledger.flush()


async def test_one_span_per_chat_with_its_attributes_and_timing(serve: Any, exported: Exported) -> None:
    served = await serve(exported, otel_enabled=True, otel_service_name="gate-test",
                         otel_endpoint="http://collector.invalid:4318/v1/traces")
    assert len(served.tracers()) == 1
    assert exported.endpoints == ["http://collector.invalid:4318/v1/traces"]  # the setting reached the exporter
    before = time.time_ns()
    raw = await served.client.chat.completions.with_raw_response.create(model=MODEL, messages=HI)
    after = time.time_ns()
    completion = raw.parse()
    (span,) = await served.spans(1)
    assert span.name == f"chat {MODEL}"
    assert span.resource.attributes["service.name"] == "gate-test"
    assert span.status.status_code is StatusCode.UNSET
    attrs = dict(span.attributes)
    assert attrs["faregate.request_id"] == raw.headers["x-request-id"]
    assert (attrs["gen_ai.operation.name"], attrs["gen_ai.request.model"]) == ("chat", MODEL)
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) \
        == (completion.usage.prompt_tokens, completion.usage.completion_tokens)
    assert (attrs["http.route"], attrs["http.response.status_code"]) == ("/v1/chat/completions", 200)
    assert (attrs["faregate.channel_id"], attrs["faregate.attempts"], attrs["faregate.end_reason"]) \
        == (served.channel_id, 1, "done")
    assert attrs["faregate.stream"] is False
    assert attrs["faregate.quota"] > 0
    assert (attrs["faregate.user_id"], attrs["faregate.key_name"]) == (served.admin.user_id, KEY_NAME)
    # never the key, nor the conversation
    values = [str(v) for v in attrs.values()]
    assert not [v for v in values if served.key.removeprefix("sk-") in v]
    assert not [v for v in values if completion.choices[0].message.content in v or v == "hi"]
    # timed from the gateway's view: inside the client's round trip, ending with the exchange
    assert before <= span.start_time < span.end_time <= after
    assert 0 <= attrs["faregate.overhead_seconds"] <= (span.end_time - span.start_time) / 1e9 + 1e-6


async def test_a_stream_is_traced_as_one_span(serve: Any, exported: Exported) -> None:
    served = await serve(exported, otel_enabled=True)
    stream = await served.client.chat.completions.create(model=MODEL, messages=HI, stream=True,
                                                         stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]
    usage = chunks[-1].usage
    (span,) = await served.spans(1)
    assert span.attributes["faregate.stream"] is True
    assert span.attributes["faregate.end_reason"] == "done"
    assert span.attributes["gen_ai.usage.output_tokens"] == usage.completion_tokens
    assert span.status.status_code is StatusCode.UNSET


async def test_failures_and_refusals(serve: Any, exported: Exported, fake_openai: Any) -> None:
    served = await serve(exported, otel_enabled=True)
    fake_openai.fail_next(500, "upstream on fire")
    with pytest.raises(openai.APIStatusError) as failed:
        await served.client.chat.completions.create(model=MODEL, messages=HI)
    with pytest.raises(openai.NotFoundError):
        await served.client.chat.completions.create(model="no-such-model", messages=HI)
    upstream, refused = await served.spans(2)
    # the upstream failed: the gateway answered 5xx, the span is an error
    assert failed.value.status_code >= 500
    assert upstream.status.status_code is StatusCode.ERROR
    assert upstream.attributes["http.response.status_code"] == failed.value.status_code
    assert upstream.attributes["faregate.attempts"] == 1
    assert upstream.attributes["error.type"] == upstream.attributes["faregate.end_reason"]
    # refused before any channel (the client's mistake, 404): traced, with the refusal's code, not an error
    assert refused.name == "chat no-such-model"
    assert refused.status.status_code is StatusCode.UNSET
    assert (refused.attributes["http.response.status_code"], refused.attributes["faregate.attempts"],
            refused.attributes["faregate.end_reason"]) == (404, 0, "model_not_found")


async def test_shutdown_exports_what_is_queued(serve: Any, exported: Exported) -> None:
    served = await serve(exported, otel_enabled=True)
    (tracer,) = served.tracers()
    await served.client.chat.completions.create(model=MODEL, messages=HI)
    await served.server.gateway.ledger.flush()
    await served.server.stop()  # the shutdown hook: no force_flush in this test
    assert [s.name for s in exported.exporter.get_finished_spans()] == [f"chat {MODEL}"]
    assert tracer.provider is None


async def test_disabled_registers_nothing_and_exports_nothing(serve: Any, exported: Exported) -> None:
    served = await serve(exported)  # otel_enabled defaults to false
    completion = await served.client.chat.completions.create(model=MODEL, messages=HI)
    assert completion.choices[0].message.content
    assert served.tracers() == []
    assert exported.endpoints == []  # no exporter was ever made
    assert exported.exporter.get_finished_spans() == ()


async def test_a_bad_sample_ratio_stops_the_start(make_gateway: Callable[..., Awaitable[GatewayServer]]) -> None:
    with pytest.raises(ValueError, match=r"^--otel-sample-ratio=1\.5 is not valid"):
        await make_gateway(plugins=PLUGINS, settings={"otel_enabled": True, "otel_sample_ratio": 1.5})
