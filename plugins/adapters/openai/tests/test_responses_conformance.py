"""The core's format conformance suite, re-run for the inbound format ``openai.responses``:
on an OpenAI channel (the Responses API passed through) and on a chat-only
OpenAI-compatible one (DeepSeek, type 43: converted to Chat Completions)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from faregate.testing.adapter_conformance import FormatConformance
from faregate_adapter_openai.responses_api.format import FORMAT_NAME
from faregate_adapter_openai.testing import FakeOpenAI

UPSTREAM_KEY = "sk-openai-upstream"


class _Responses(FormatConformance):
    plugins = ["faregate-adapter-openai"]
    format_name = FORMAT_NAME
    model = "gpt-4o-mini"

    @pytest_asyncio.fixture
    async def upstream(self) -> AsyncIterator[FakeOpenAI]:
        async with FakeOpenAI(key=UPSTREAM_KEY) as fake:
            yield fake
        assert not fake.violations, fake.violations  # what went upstream is valid for OpenAI

    def chat_request(self, model: str) -> dict[str, Any]:
        return {"model": model, "input": "hello", "max_output_tokens": 16}

    def chat_path(self, model: str) -> str:
        return "/v1/responses"


class TestResponsesOnOpenAI(_Responses):
    channel_type = 1


class TestResponsesOnAChatOnlyVendor(_Responses):
    channel_type = 43
