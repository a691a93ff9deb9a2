"""Fixtures for the Anthropic adapter's tests. ``fake_anthropic`` could move to the core's
pytest plugin next to ``fake_openai`` once other plugins need it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from faregate.testing.fake_anthropic import FakeAnthropic


@pytest_asyncio.fixture
async def fake_anthropic() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(api_key="sk-ant-upstream") as fake:
        yield fake
