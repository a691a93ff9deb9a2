"""Pytest fixtures of the Anthropic plugin (entry point ``pytest11``):

* ``fake_anthropic`` — a :class:`~faregate_adapter_anthropic.testing.FakeAnthropic` on a
  loopback port that accepts only the key :data:`FAKE_ANTHROPIC_KEY`. It validates every
  Messages request against Anthropic's published request schema and fails the test at
  teardown when one violated it; a test that sends invalid bodies on purpose opts out
  with ``@pytest.mark.allow_upstream_violations``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_anthropic.testing.fake import FakeAnthropic

#: the one key ``fake_anthropic`` accepts (``x-api-key``)
FAKE_ANTHROPIC_KEY = "sk-ant-upstream"

@pytest_asyncio.fixture
async def fake_anthropic(request: pytest.FixtureRequest) -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(key=FAKE_ANTHROPIC_KEY) as fake:
        yield fake
    assert_no_violations(fake, request.node, "Anthropic")
