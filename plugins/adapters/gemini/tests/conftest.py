"""Shared fixtures of the Gemini plugin's gateway tests: a gateway with every installed
plugin, the fake Gemini (``fake_gemini``, which fails a test whose requests break Gemini's
schema), priced models, and clients of the three formats closed before the gateway stops."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
import openai
import pytest
import pytest_asyncio
from google import genai
from google.genai import types

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_gemini.testing import EMBEDDING, FLASH, GEMINI_3, PRO, FakeGemini
from faregate_adapter_gemini.testing.fixtures import FAKE_GEMINI_KEY

GPT = "gpt-4o-mini"  # the fake OpenAI's and the fake Anthropic's models, relayed too
CLAUDE = "claude-sonnet-4-5"
#: every model the tests relay, priced (input ratio, completion ratio)
RATIOS = {FLASH: (0.15, 8.33), PRO: (0.625, 8), GEMINI_3: (1.0, 6), EMBEDDING: (0.075, 1),
          GPT: (0.075, 4), CLAUDE: (1.5, 5), "text-embedding-3-small": (0.01, 1)}


@dataclass
class Deployment:
    """A gateway with a Gemini channel on the fake, a key, and client makers."""

    server: GatewayServer
    admin: AdminClient
    fake: FakeGemini
    key: str
    channel: int
    _open: list[Any] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def genai(self, version: str = "v1beta", key: str | None = None) -> genai.Client:
        client = genai.Client(api_key=key or self.key,
                              http_options=types.HttpOptions(base_url=self.base_url, api_version=version))
        self._open.append(client)
        return client

    def openai(self) -> openai.AsyncOpenAI:
        client = openai.AsyncOpenAI(base_url=self.base_url + "/v1", api_key=self.key, max_retries=0)
        self._open.append(client)
        return client

    def anthropic(self) -> anthropic.AsyncAnthropic:
        client = anthropic.AsyncAnthropic(base_url=self.base_url, api_key=self.key, max_retries=0,
                                          _strict_response_validation=True)
        self._open.append(client)
        return client

    def http(self) -> httpx.AsyncClient:
        client = httpx.AsyncClient(base_url=self.base_url, timeout=30)
        self._open.append(client)
        return client

    async def close(self) -> None:
        for client in self._open:
            if isinstance(client, genai.Client):
                await client.aio.aclose()
                client.close()
            elif isinstance(client, httpx.AsyncClient):
                await client.aclose()
            else:
                await client.close()


async def price_models(admin: AdminClient) -> None:
    await admin.set_option("ModelRatio", {m: r for m, (r, _) in RATIOS.items()})
    await admin.set_option("CompletionRatio", {m: c for m, (_, c) in RATIOS.items()})


@pytest.fixture
def ratios() -> dict[str, tuple[float, float]]:
    """The (model ratio, completion ratio) of every model :func:`deployed` prices."""
    return dict(RATIOS)


@pytest_asyncio.fixture
async def deployed(gateway: GatewayServer, admin: AdminClient, fake_gemini: FakeGemini) -> AsyncIterator[Deployment]:
    await price_models(admin)
    channel = await admin.add_channel(base_url=fake_gemini.base_url, type=24, key=FAKE_GEMINI_KEY, name="gemini",
                                      models=",".join([FLASH, PRO, GEMINI_3, EMBEDDING]))
    key = await admin.add_token(remain_quota=50_000_000)
    deployment = Deployment(gateway, admin, fake_gemini, key, channel)
    yield deployment
    await deployment.close()  # before the gateway stops: open keep-alive connections hold up its shutdown
