"""Pytest fixtures of the Replicate plugin (entry point ``pytest11``):

* ``fake_replicate`` — a :class:`~faregate_adapter_replicate.testing.FakeReplicate` on a
  loopback port accepting only :data:`FAKE_REPLICATE_KEY`. It checks every prediction it is
  asked to create and fails the test at teardown when one broke Replicate's request shape; a
  test that sends invalid bodies on purpose opts out with
  ``@pytest.mark.allow_upstream_violations``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_replicate.testing.fake import FakeReplicate

#: the one key ``fake_replicate`` accepts (``Authorization: Bearer``)
FAKE_REPLICATE_KEY = "r8_upstream_key"


@pytest_asyncio.fixture
async def fake_replicate(request: pytest.FixtureRequest) -> AsyncIterator[FakeReplicate]:
    async with FakeReplicate(key=FAKE_REPLICATE_KEY) as fake:
        yield fake
    assert_no_violations(fake, request.node, "Replicate")
