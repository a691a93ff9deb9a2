"""Pytest fixtures of the Dify plugin (entry point ``pytest11``):

* ``fake_dify`` — a :class:`~faregate_adapter_dify.testing.FakeDify` on a loopback port
  accepting only :data:`FAKE_DIFY_KEY`. It validates every request against the shape Dify
  documents and fails the test at teardown when one broke it; a test that sends invalid
  bodies on purpose opts out with ``@pytest.mark.allow_upstream_violations``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_dify.testing.fake import FakeDify

#: the one key ``fake_dify`` accepts (a Dify app key, ``Authorization: Bearer``)
FAKE_DIFY_KEY = "app-upstream-key"


@pytest_asyncio.fixture
async def fake_dify(request: pytest.FixtureRequest) -> AsyncIterator[FakeDify]:
    async with FakeDify(key=FAKE_DIFY_KEY) as fake:
        yield fake
    assert_no_violations(fake, request.node, "Dify")
