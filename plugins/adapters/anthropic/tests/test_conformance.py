"""The core's adapter and format conformance suites, re-run by the Anthropic plugin
against its own fake upstream (which validates every request it receives)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from faregate.testing.adapter_conformance import AdapterConformance, FormatConformance
from faregate_adapter_anthropic.format import FORMAT_NAME
from faregate_adapter_anthropic.provider import ANTHROPIC_CHANNEL_TYPE
from faregate_adapter_anthropic.testing import FakeAnthropic

UPSTREAM_KEY = "sk-ant-conformance"
MODEL = "claude-sonnet-4-5"


class _AnthropicUpstream:
    @pytest_asyncio.fixture
    async def upstream(self) -> AsyncIterator[FakeAnthropic]:
        async with FakeAnthropic(key=UPSTREAM_KEY) as fake:
            yield fake


class TestAnthropicChannel(_AnthropicUpstream, AdapterConformance):
    plugins = ["faregate-adapter-openai", "faregate-adapter-anthropic"]  # OpenAI clients, Anthropic upstream
    channel_type = ANTHROPIC_CHANNEL_TYPE
    model = MODEL


class TestAnthropicMessagesFormat(_AnthropicUpstream, FormatConformance):
    plugins = ["faregate-adapter-anthropic"]
    format_name = FORMAT_NAME
    channel_type = ANTHROPIC_CHANNEL_TYPE
    model = MODEL

    def chat_request(self, model: str) -> dict[str, Any]:
        return {"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]}

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key, "anthropic-version": "2023-06-01"}

    def error_message(self, body: Any) -> str:
        assert body["type"] == "error", body
        return str(body["error"]["message"])
