"""The core's adapter and format conformance suites, re-run by the Gemini plugin against
its own fake upstream (which validates every request it receives)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from faregate.testing.adapter_conformance import AdapterConformance, FormatConformance
from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_gemini.names import FORMAT_NAME, GEMINI_CHANNEL_TYPE
from faregate_adapter_gemini.testing import FakeGemini
from faregate_adapter_gemini.testing.schema import validate_error

UPSTREAM_KEY = "AIzaConformanceKey0123456789abcdefgh"
MODEL = "gemini-2.5-flash"


class _GeminiUpstream:
    @pytest_asyncio.fixture
    async def upstream(self, request: pytest.FixtureRequest) -> AsyncIterator[FakeGemini]:
        async with FakeGemini(key=UPSTREAM_KEY) as fake:
            yield fake
        assert_no_violations(fake, request.node, "Gemini")


class TestGeminiChannel(_GeminiUpstream, AdapterConformance):
    plugins = ["faregate-adapter-openai", "faregate-adapter-gemini"]  # OpenAI clients, Gemini upstream
    channel_type = GEMINI_CHANNEL_TYPE
    model = MODEL


class TestGeminiFormat(_GeminiUpstream, FormatConformance):
    plugins = ["faregate-adapter-gemini"]
    format_name = FORMAT_NAME
    channel_type = GEMINI_CHANNEL_TYPE
    model = MODEL

    def chat_request(self, model: str) -> dict[str, Any]:
        return {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}

    def chat_path(self, model: str) -> str:
        return f"/v1beta/models/{model}:generateContent"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def error_message(self, body: Any) -> str:
        validate_error(body)
        return str(body["error"]["message"])
