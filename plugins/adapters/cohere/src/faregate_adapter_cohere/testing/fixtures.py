"""Pytest fixtures of the Cohere plugin (entry point ``pytest11``):

* ``fake_cohere`` — a :class:`~faregate_adapter_cohere.testing.FakeCohere` on a loopback
  port accepting only :data:`FAKE_COHERE_KEY`. It validates every chat and rerank request
  against Cohere's published request schemas and fails the test at teardown when one
  violated them; a test that sends invalid bodies on purpose opts out with
  ``@pytest.mark.allow_upstream_violations``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_cohere.testing.fake import FakeCohere

#: the one key ``fake_cohere`` accepts (``Authorization: Bearer``)
FAKE_COHERE_KEY = "co-upstream-key"


@pytest_asyncio.fixture
async def fake_cohere(request: pytest.FixtureRequest) -> AsyncIterator[FakeCohere]:
    async with FakeCohere(key=FAKE_COHERE_KEY) as fake:
        yield fake
    assert_no_violations(fake, request.node, "Cohere")
