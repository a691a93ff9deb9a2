"""The core's adapter and format conformance suites, re-run by the OpenAI plugin against
its own fake upstream: the OpenAI channel, the OpenAI chat format, and an
OpenAI-compatible vendor declared in a few lines of data."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar

import pytest_asyncio

from faregate.api import Provider, hookimpl
from faregate.testing.adapter_conformance import AdapterConformance, FormatConformance
from faregate_adapter_openai.format import FORMAT_NAME
from faregate_adapter_openai.provider import OpenAICompatibleProvider
from faregate_adapter_openai.testing import FakeOpenAI

UPSTREAM_KEY = "sk-openai-upstream"


class _OpenAIUpstream:
    @pytest_asyncio.fixture
    async def upstream(self) -> AsyncIterator[FakeOpenAI]:
        async with FakeOpenAI(key=UPSTREAM_KEY) as fake:
            yield fake


class TestOpenAIChannel(_OpenAIUpstream, AdapterConformance):
    plugins = ["faregate-adapter-openai"]
    channel_type = 1
    model = "gpt-4o-mini"


class TestOpenAIChatFormat(_OpenAIUpstream, FormatConformance):
    plugins = ["faregate-adapter-openai"]
    format_name = FORMAT_NAME
    channel_type = 1
    model = "gpt-4o-mini"

    def chat_request(self, model: str) -> dict[str, Any]:
        return {"model": model, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}


class AcmeProvider(OpenAICompatibleProvider):
    """All a vendor that speaks OpenAI's wire protocol needs: a name, a channel type
    and where it lives."""

    name = "acme"
    channel_types = (9201,)
    default_base_url = "https://api.acme.example"


class AcmePlugin:
    @hookimpl
    def register_providers(self, register: Callable[[Provider], None]) -> None:
        register(AcmeProvider())


class TestOpenAICompatibleVendor(_OpenAIUpstream, AdapterConformance):
    plugins = ["faregate-adapter-openai"]
    extra_plugins: ClassVar[list[object]] = [AcmePlugin()]
    channel_type = 9201
    model = "gpt-4o"
