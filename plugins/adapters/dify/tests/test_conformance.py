"""The core's adapter conformance suite, re-run on the Dify channel type against the fake
Dify (which checks every request against the shape Dify documents)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from faregate.testing.adapter_conformance import AdapterConformance
from faregate_adapter_dify.provider import DIFY_CHANNEL_TYPE
from faregate_adapter_dify.testing import APP_MODEL, FakeDify


class TestDifyChannel(AdapterConformance):
    plugins = ["faregate-adapter-openai", "faregate-adapter-dify"]  # OpenAI clients, a Dify app upstream
    channel_type = DIFY_CHANNEL_TYPE
    model = APP_MODEL
    lists_models = False

    @pytest_asyncio.fixture
    async def upstream(self) -> AsyncIterator[FakeDify]:
        async with FakeDify(key="app-conformance") as fake:
            yield fake
        assert not fake.violations, fake.violations
