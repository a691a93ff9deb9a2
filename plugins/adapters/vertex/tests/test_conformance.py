"""The core's adapter conformance suite, re-run by the Vertex plugin against its own fake
(which checks every request's credentials and body against Vertex's schemas): OpenAI
clients on a Vertex channel, a Gemini model and a Claude model, with an API key and a
project (``vertex_project``; the service account's token exchange has tests of its own)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.adapter_conformance import AdapterConformance
from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_vertex.names import VERTEX_CHANNEL_TYPE
from faregate_adapter_vertex.testing import PROJECT, FakeVertex

PLUGINS = ["faregate-adapter-openai", "faregate-adapter-anthropic", "faregate-adapter-gemini",
           "faregate-adapter-vertex"]
FIELDS = {"other": "us-central1", "setting": {"vertex_project": PROJECT}}


class _VertexUpstream:
    @pytest_asyncio.fixture
    async def upstream(self, request: pytest.FixtureRequest) -> AsyncIterator[FakeVertex]:
        async with FakeVertex() as fake:
            yield fake
        assert_no_violations(fake, request.node, "Vertex AI")


class TestVertexGemini(_VertexUpstream, AdapterConformance):
    plugins = PLUGINS
    channel_type = VERTEX_CHANNEL_TYPE
    model = "gemini-2.5-flash"
    channel_fields = FIELDS
    lists_models = False  # an API key lists none (a service account does: test_management.py)


class TestVertexClaude(_VertexUpstream, AdapterConformance):
    plugins = PLUGINS
    channel_type = VERTEX_CHANNEL_TYPE
    model = "claude-sonnet-4-5@20250929"
    channel_fields = FIELDS
    lists_models = False
