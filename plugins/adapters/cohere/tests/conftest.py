"""A gateway with the OpenAI, Anthropic and Cohere plugins, a Cohere channel on the fake
Cohere (``fake_cohere``, which fails a test whose requests break Cohere's schema), priced
models, a key, and SDK clients closed before the gateway stops."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
import openai
import pytest_asyncio

from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs
from faregate_adapter_cohere.provider import COHERE_CHANNEL_TYPE
from faregate_adapter_cohere.testing import CHAT_MODEL, RERANK_MODEL, FakeCohere
from faregate_adapter_cohere.testing.fixtures import FAKE_COHERE_KEY

#: (input ratio, completion ratio) of the models the tests relay (``Deployment.ratios``)
RATIOS = {CHAT_MODEL: (1.25, 4.0), RERANK_MODEL: (0.5, 1.0)}
PLUGINS = ["faregate-adapter-openai", "faregate-adapter-anthropic", "faregate-adapter-cohere"]


@dataclass
class Deployment:
    server: GatewayServer
    admin: AdminClient
    fake: FakeCohere
    key: str
    channel: int
    ratios: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(RATIOS))
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

    async def post(self, path: str, body: Any) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.server.base_url) as http:
            return await http.post(path, json=body, headers={"Authorization": f"Bearer {self.key}"})

    async def consume_logs(self) -> list[Any]:
        return await consume_logs(self.server)


@pytest_asyncio.fixture
async def deployment(make_gateway: Any, fake_cohere: FakeCohere) -> AsyncIterator[Deployment]:
    server = await make_gateway(plugins=PLUGINS)
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.set_option("ModelRatio", {name: ratio for name, (ratio, _) in RATIOS.items()})
    await admin.set_option("CompletionRatio", {name: ratio for name, (_, ratio) in RATIOS.items()})
    channel = await admin.add_channel(type=COHERE_CHANNEL_TYPE, base_url=fake_cohere.base_url, key=FAKE_COHERE_KEY,
                                      models=f"{CHAT_MODEL},{RERANK_MODEL}", name="cohere")
    key = await admin.add_token(remain_quota=50_000_000)
    deployed = Deployment(server, admin, fake_cohere, key, channel)
    yield deployed
    for client in deployed._open:
        await client.close()
    await admin.close()
