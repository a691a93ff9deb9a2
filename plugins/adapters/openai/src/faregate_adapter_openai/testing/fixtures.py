"""Pytest fixtures of the OpenAI plugin (entry point ``pytest11``), for its own tests, the
core's and any plugin's that needs an OpenAI upstream:

* ``fake_openai`` — a :class:`~faregate_adapter_openai.testing.FakeOpenAI` on a loopback
  port, accepting any key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from faregate_adapter_openai.testing.server import FakeOpenAI


@pytest_asyncio.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake
