"""The core's adapter conformance suite, re-run by the Bedrock plugin against its own fake
(which checks every request's credentials and body): OpenAI clients on a Bedrock channel
with a Bedrock API key, a Claude model (InvokeModel) and a Converse model."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.adapter_conformance import AdapterConformance
from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_bedrock.names import BEDROCK_CHANNEL_TYPE
from faregate_adapter_bedrock.testing import REGION, FakeBedrock


class _BedrockUpstream:
    @pytest_asyncio.fixture
    async def upstream(self, request: pytest.FixtureRequest) -> AsyncIterator[FakeBedrock]:
        async with FakeBedrock() as fake:
            yield fake
        assert_no_violations(fake, request.node, "Bedrock")


class TestBedrockClaude(_BedrockUpstream, AdapterConformance):
    plugins = ["faregate-adapter-openai", "faregate-adapter-anthropic", "faregate-adapter-bedrock"]
    channel_type = BEDROCK_CHANNEL_TYPE
    model = "anthropic.claude-3-5-haiku-20241022-v1:0"
    channel_fields = {"other": REGION}  # the key is a bare API key: the region comes from other


class TestBedrockConverse(_BedrockUpstream, AdapterConformance):
    plugins = ["faregate-adapter-openai", "faregate-adapter-anthropic", "faregate-adapter-bedrock"]
    channel_type = BEDROCK_CHANNEL_TYPE
    model = "amazon.nova-pro-v1:0"
    channel_fields = {"other": REGION}
