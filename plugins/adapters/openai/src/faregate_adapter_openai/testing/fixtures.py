"""Pytest fixtures of the OpenAI plugin (entry point ``pytest11``), for its own tests, the
core's and any plugin's that needs an OpenAI upstream:

* ``fake_openai`` — a :class:`~faregate_adapter_openai.testing.FakeOpenAI` on a loopback
  port, accepting any key. It validates every chat request against OpenAI's published
  request schema and fails the test at teardown when one violated it (what the gateway
  sends upstream is part of what a test checks); a test that sends invalid bodies on
  purpose opts out with ``@pytest.mark.allow_upstream_violations``.
* ``fake_azure`` — a :class:`~faregate_adapter_openai.testing.azure.FakeAzure` (Azure OpenAI's
  deployment URLs, ``api-key``, ``api-version``), validating requests as ``fake_openai`` does.
* ``fake_jina`` — a :class:`~faregate_adapter_openai.testing.jina.FakeJina` (rerank and
  embeddings), validating requests against Jina's documented shape the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_openai.testing.azure import FakeAzure
from faregate_adapter_openai.testing.jina import FakeJina
from faregate_adapter_openai.testing.server import FakeOpenAI


@pytest_asyncio.fixture
async def fake_openai(request: pytest.FixtureRequest) -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake
    assert_no_violations(fake, request.node, "OpenAI")


@pytest_asyncio.fixture
async def fake_jina(request: pytest.FixtureRequest) -> AsyncIterator[FakeJina]:
    """A :class:`~faregate_adapter_openai.testing.jina.FakeJina` (rerank, embeddings) on a
    loopback port, any key; fails the test when a request broke Jina's documented shape."""
    async with FakeJina() as fake:
        yield fake
    assert_no_violations(fake, request.node, "Jina")


@pytest_asyncio.fixture
async def fake_azure(request: pytest.FixtureRequest) -> AsyncIterator[FakeAzure]:
    """A :class:`~faregate_adapter_openai.testing.azure.FakeAzure` on a loopback port, any
    ``api-key``; fails the test when a request broke OpenAI's schemas."""
    async with FakeAzure() as fake:
        yield fake
    assert_no_violations(fake, request.node, "Azure OpenAI")
