"""Pytest fixtures of the Gemini plugin (entry point ``pytest11``):

* ``fake_gemini`` — a :class:`~faregate_adapter_gemini.testing.FakeGemini` on a loopback
  port that accepts only the key :data:`FAKE_GEMINI_KEY`. It validates every request
  against Gemini's published schema (and its own answers against the response schemas)
  and fails the test at teardown when one violated it; a test that sends invalid bodies
  on purpose opts out with ``@pytest.mark.allow_upstream_violations``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_gemini.testing.fake import FakeGemini

#: the one key ``fake_gemini`` accepts (``x-goog-api-key``)
FAKE_GEMINI_KEY = "AIzaFakeGeminiUpstreamKey0123456789"


@pytest_asyncio.fixture
async def fake_gemini(request: pytest.FixtureRequest) -> AsyncIterator[FakeGemini]:
    async with FakeGemini(key=FAKE_GEMINI_KEY) as fake:
        yield fake
    assert_no_violations(fake, request.node, "Gemini")
