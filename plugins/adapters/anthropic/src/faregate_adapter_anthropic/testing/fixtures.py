"""Pytest fixtures of the Anthropic plugin (entry point ``pytest11``):

* ``fake_anthropic`` — a :class:`~faregate_adapter_anthropic.testing.FakeAnthropic` on a
  loopback port that accepts only the key :data:`FAKE_ANTHROPIC_KEY`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from faregate_adapter_anthropic.testing.fake import FakeAnthropic

#: the one key ``fake_anthropic`` accepts (``x-api-key``)
FAKE_ANTHROPIC_KEY = "sk-ant-upstream"


@pytest_asyncio.fixture
async def fake_anthropic() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(key=FAKE_ANTHROPIC_KEY) as fake:
        yield fake
