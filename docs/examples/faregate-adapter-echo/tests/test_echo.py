"""End-to-end tests: a real gateway with this plugin installed, an OpenAI SDK client
in front of it and a fake echo upstream behind it.

The fixtures ``make_gateway`` and the ``AdminClient`` come with the core
(``faregate.testing``); ``FakeEcho`` comes with this plugin.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
import pytest_asyncio

from faregate.api import Price, Usage, usage_quota
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs
from faregate.testing.plugins import installed, registered
from faregate_adapter_echo.provider import ECHO_CHANNEL_TYPE, EchoProvider
from faregate_adapter_echo.testing import FakeEcho

# The plugin set under test: this plugin plus the one that serves OpenAI's format to
# clients. Naming it keeps the test independent of whatever else is installed.
PLUGINS = ["faregate-adapter-openai", "faregate-adapter-echo"]
MODEL = "echo-1"
MODEL_RATIO = 2.0
ECHO_KEY = "echo-secret"


@dataclass
class Setup:
    gateway: GatewayServer
    admin: AdminClient
    echo: FakeEcho
    client: openai.AsyncOpenAI
    channel_id: int


@pytest_asyncio.fixture
async def setup(make_gateway: Any) -> AsyncIterator[Setup]:
    async with FakeEcho(key=ECHO_KEY) as echo:
        gateway = await make_gateway(plugins=PLUGINS)
        admin = AdminClient(gateway.base_url)
        await admin.setup_root()
        # a price for the made-up model, in new-api's ratio units
        await admin.set_option("ModelRatio", {MODEL: MODEL_RATIO})
        channel_id = await admin.add_channel(type=ECHO_CHANNEL_TYPE, base_url=echo.base_url, models=MODEL,
                                             key=ECHO_KEY, name="echo")
        key = await admin.add_token(remain_quota=1_000_000)
        client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
        try:
            yield Setup(gateway, admin, echo, client, channel_id)
        finally:
            await client.close()
            await admin.close()
            await gateway.gateway.ledger.flush()  # leave no log batch for shutdown to race with


CONVERSATION = [
    {"role": "system", "content": "You repeat things."},
    {"role": "user", "content": "first question"},
    {"role": "assistant", "content": "first question"},
    {"role": "user", "content": "hello echo world"},
]


def test_hook_register_providers(tmp_path: Path) -> None:
    """The installed distribution's entry point loads and registers the provider."""
    report = installed("faregate-adapter-echo")
    assert report.error is None
    assert report.version == "0.1.0"
    assert report.hooks == ["register_providers"]
    providers = registered("faregate-adapter-echo", "register_providers", tmp_path)
    assert any(isinstance(p, EchoProvider) and ECHO_CHANNEL_TYPE in p.channel_types for p in providers)


async def test_regular(setup: Setup) -> None:
    reply = await setup.client.chat.completions.create(model=MODEL, messages=CONVERSATION)
    assert reply.choices[0].message.content == "hello echo world"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.model == MODEL
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (3, 3)
    # what went over the wire: echo's protocol, not OpenAI's
    sent = setup.echo.requests[-1]
    assert sent["path"] == "/echo"
    assert sent["headers"]["x-echo-key"] == ECHO_KEY
    # no bound from the client: the gateway sends the one it reserved (DefaultMaxTokensReserve here)
    assert sent["json"] == {"model": MODEL, "prompt": "hello echo world", "max_tokens": 4096, "stream": False}


async def test_regular_max_tokens(setup: Setup) -> None:
    reply = await setup.client.chat.completions.create(model=MODEL, messages=CONVERSATION, max_tokens=2)
    assert reply.choices[0].message.content == "hello echo"
    assert reply.choices[0].finish_reason == "length"
    assert setup.echo.requests[-1]["json"]["max_tokens"] == 2


async def test_streaming_with_usage(setup: Setup) -> None:
    stream = await setup.client.chat.completions.create(
        model=MODEL, messages=CONVERSATION, stream=True, stream_options={"include_usage": True})
    text, finish, usage = "", None, None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert text == "hello echo world"
    assert finish == "stop"
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (3, 3, 6)
    assert setup.echo.requests[-1]["json"]["stream"] is True


async def test_streaming_without_usage(setup: Setup) -> None:
    stream = await setup.client.chat.completions.create(model=MODEL, messages=CONVERSATION, stream=True)
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "hello echo world"
    assert all(c.usage is None for c in chunks)  # the client did not ask for it


async def test_upstream_error_is_openai_shaped(setup: Setup) -> None:
    setup.echo.fail_next(429, "echo is tired")
    with pytest.raises(openai.RateLimitError) as caught:
        await setup.client.chat.completions.create(model=MODEL, messages=CONVERSATION)
    err = caught.value
    assert err.status_code == 429
    assert isinstance(err.body, dict)  # the SDK found OpenAI's {"error": {...}} envelope
    assert "echo is tired" in err.body["message"]
    assert err.body["code"] == "echo_problem"


async def test_billing(setup: Setup) -> None:
    await setup.client.chat.completions.create(model=MODEL, messages=CONVERSATION)
    rows = await consume_logs(setup.gateway)  # writes the pending batch first: logs reach the database in batches
    assert len(rows) == 1
    row = rows[0]
    assert (row.model_name, row.prompt_tokens, row.completion_tokens) == (MODEL, 3, 3)
    assert row.channel_id == setup.channel_id
    assert row.quota == usage_quota(Price(model_ratio=MODEL_RATIO), Usage(input_tokens=3, output_tokens=3))
    assert row.quota == 12  # (3 in + 3 out × completion ratio 1) × model ratio 2
