"""The core's adapter conformance suite, re-run on the echo channel type against FakeEcho."""

from collections.abc import AsyncIterator

import pytest_asyncio

from faregate.testing.adapter_conformance import AdapterConformance
from faregate_adapter_echo.provider import ECHO_CHANNEL_TYPE
from faregate_adapter_echo.testing import FakeEcho


class TestEcho(AdapterConformance):
    plugins = ["faregate-adapter-openai", "faregate-adapter-echo"]  # OpenAI-speaking clients, echo upstream
    channel_type, model, lists_models = ECHO_CHANNEL_TYPE, "echo-1", False

    @pytest_asyncio.fixture
    async def upstream(self) -> AsyncIterator[FakeEcho]:
        async with FakeEcho(key="echo-secret") as fake:
            yield fake
