"""Shared fixtures of the Vertex plugin's gateway tests: a gateway with every installed
plugin and a Vertex channel on the fake (``fake_vertex``, which fails a test whose requests
break Vertex's schemas), with a service account (its key file pasted as it comes, the token
endpoint a fake that checks the signed assertions) or an API key; priced models; clients
of the formats, closed before the gateway stops."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest_asyncio
from google import genai
from google.genai import types

from faregate.api import UpstreamClient
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_vertex.testing import API_KEY, FakeGoogleOAuth, FakeVertex, TestServiceAccount

GEMINI = "gemini-2.5-flash"
CLAUDE = "claude-sonnet-4-5"  # called as claude-sonnet-4-5@20250929
CLAUDE_VERTEX = "claude-sonnet-4-5@20250929"
#: new-api's region map: Claude in us-east5, the rest in us-central1
REGIONS = '{"default": "us-central1", "claude-sonnet-4-5": "us-east5"}'
RATIOS = {GEMINI: (0.15, 8.0), CLAUDE: (1.5, 5.0)}


@dataclass
class Deployment:
    server: GatewayServer
    admin: AdminClient
    fake: FakeVertex
    oauth: FakeGoogleOAuth
    account: TestServiceAccount
    key: str
    channel: int
    _open: list[Any] = field(default_factory=list)

    @property
    def provider(self) -> Any:
        return self.server.gateway.providers[41]

    def openai(self) -> openai.AsyncOpenAI:
        client = openai.AsyncOpenAI(base_url=self.server.base_url + "/v1", api_key=self.key, max_retries=0)
        self._open.append(client)
        return client

    def anthropic(self) -> anthropic.AsyncAnthropic:
        client = anthropic.AsyncAnthropic(base_url=self.server.base_url, api_key=self.key, max_retries=0,
                                          _strict_response_validation=True)
        self._open.append(client)
        return client

    def genai(self, version: str = "v1beta") -> genai.Client:
        client = genai.Client(api_key=self.key, http_options=types.HttpOptions(base_url=self.server.base_url,
                                                                                api_version=version))
        self._open.append(client)
        return client

    async def close(self) -> None:
        for client in self._open:
            if isinstance(client, genai.Client):
                await client.aio.aclose()
                client.close()
            else:
                await client.close()


async def price(admin: AdminClient) -> None:
    await admin.set_option("ModelRatio", {m: r for m, (r, _) in RATIOS.items()})
    await admin.set_option("CompletionRatio", {m: c for m, (_, c) in RATIOS.items()})


@pytest_asyncio.fixture
async def deployed(gateway: GatewayServer, admin: AdminClient, fake_vertex: FakeVertex,
                   fake_google_oauth: FakeGoogleOAuth, vertex_account: TestServiceAccount
                   ) -> AsyncIterator[Deployment]:
    """A channel with the service account (``vertex_key_type: json``, new-api's setting)."""
    await price(admin)
    channel = await admin.add_channel(type=41, base_url=fake_vertex.base_url, key=vertex_account.key, name="vertex",
                                      models=",".join(RATIOS), other=REGIONS,
                                      settings='{"vertex_key_type": "json"}')
    key = await admin.add_token(remain_quota=50_000_000)
    deployment = Deployment(gateway, admin, fake_vertex, fake_google_oauth, vertex_account, key, channel)
    yield deployment
    await deployment.close()


@pytest_asyncio.fixture
async def express(gateway: GatewayServer, admin: AdminClient, fake_vertex: FakeVertex,
                  fake_google_oauth: FakeGoogleOAuth, vertex_account: TestServiceAccount
                  ) -> AsyncIterator[Deployment]:
    """A channel with an API key (express mode: Google's models, no project)."""
    await price(admin)
    channel = await admin.add_channel(type=41, base_url=fake_vertex.base_url, key=API_KEY, name="vertex-express",
                                      models=",".join(RATIOS), other="global")
    key = await admin.add_token(remain_quota=50_000_000)
    deployment = Deployment(gateway, admin, fake_vertex, fake_google_oauth, vertex_account, key, channel)
    yield deployment
    await deployment.close()


@pytest_asyncio.fixture
async def upstream_client() -> AsyncIterator[UpstreamClient]:
    """An upstream client as a gateway's (loopback allowed: the fakes), for a token cache alone."""
    client = UpstreamClient(connect_timeout=5.0, first_byte_timeout=30.0)
    await client.start()
    yield client
    await client.stop()
