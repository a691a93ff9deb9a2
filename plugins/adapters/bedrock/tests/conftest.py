"""Shared fixtures of the Bedrock plugin's gateway tests: a gateway with every installed
plugin and a Bedrock channel on the fake (``fake_bedrock``, which fails a test whose
requests break Bedrock's schemas), in each of the two key modes: new-api's ``AK|SK|region``
(SigV4) and ``APIKEY|region`` (a Bedrock API key); priced models; clients of the formats,
closed before the gateway stops."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest
import pytest_asyncio
from google import genai
from google.genai import types

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_bedrock.testing import FakeBedrock

#: a client's names: the channel calls ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``
#: (InvokeModel, through the US inference profile) and ``amazon.nova-pro-v1:0`` (Converse)
CLAUDE = "claude-sonnet-4-5"
CLAUDE_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
NOVA = "amazon.nova-pro-v1:0"
RATIOS = {CLAUDE: (1.5, 5.0), NOVA: (0.4, 4.0)}
MODES = ["sigv4", "api_key"]


@dataclass
class Deployment:
    server: GatewayServer
    admin: AdminClient
    fake: FakeBedrock
    key: str
    channel: int
    mode: str
    _open: list[Any] = field(default_factory=list)

    def openai(self) -> openai.AsyncOpenAI:
        client = openai.AsyncOpenAI(base_url=self.server.base_url + "/v1", api_key=self.key, max_retries=0)
        self._open.append(client)
        return client

    def anthropic(self) -> anthropic.AsyncAnthropic:
        client = anthropic.AsyncAnthropic(base_url=self.server.base_url, api_key=self.key, max_retries=0,
                                          _strict_response_validation=True)
        self._open.append(client)
        return client

    def genai(self) -> genai.Client:
        client = genai.Client(api_key=self.key, http_options=types.HttpOptions(base_url=self.server.base_url,
                                                                                api_version="v1beta"))
        self._open.append(client)
        return client

    def calls(self) -> list[dict[str, Any]]:
        """What reached the fake Bedrock."""
        return self.fake.requests

    async def close(self) -> None:
        for client in self._open:
            if isinstance(client, genai.Client):
                await client.aio.aclose()
                client.close()
            else:
                await client.close()


async def add_bedrock(admin: AdminClient, fake: FakeBedrock, mode: str, **fields: Any) -> int:
    key = fake.sigv4_key if mode == "sigv4" else fake.api_key_channel_key
    return await admin.add_channel(type=33, base_url=fake.base_url, key=key, name=f"bedrock-{mode}",
                                   models=",".join(RATIOS), **fields)


@pytest_asyncio.fixture(params=MODES)
async def deployed(request: pytest.FixtureRequest, gateway: GatewayServer, admin: AdminClient,
                   fake_bedrock: FakeBedrock) -> AsyncIterator[Deployment]:
    await admin.set_option("ModelRatio", {m: r for m, (r, _) in RATIOS.items()})
    await admin.set_option("CompletionRatio", {m: c for m, (_, c) in RATIOS.items()})
    channel = await add_bedrock(admin, fake_bedrock, request.param)
    key = await admin.add_token(remain_quota=50_000_000)
    deployment = Deployment(gateway, admin, fake_bedrock, key, channel, request.param)
    yield deployment
    await deployment.close()
    assert fake_bedrock.auth_seen == {("sigv4" if request.param == "sigv4" else "bearer"): len(fake_bedrock.requests)}
