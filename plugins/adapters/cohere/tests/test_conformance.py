"""The core's adapter conformance suite, re-run on the Cohere channel type against the fake
Cohere (which validates every request against Cohere's published OpenAPI document)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from faregate.testing.adapter_conformance import AdapterConformance
from faregate_adapter_cohere.provider import COHERE_CHANNEL_TYPE
from faregate_adapter_cohere.testing import FakeCohere


class TestCohereChannel(AdapterConformance):
    plugins = ["faregate-adapter-openai", "faregate-adapter-cohere"]  # OpenAI clients, Cohere upstream
    channel_type = COHERE_CHANNEL_TYPE
    model = "command-a-03-2025"

    @pytest_asyncio.fixture
    async def upstream(self) -> AsyncIterator[FakeCohere]:
        async with FakeCohere(key="co-conformance") as fake:
            yield fake
        assert not fake.violations, fake.violations
