"""Pytest fixtures of the Bedrock plugin (entry point ``pytest11``):

* ``fake_bedrock`` — a :class:`~faregate_adapter_bedrock.testing.FakeBedrock` on a loopback
  port that accepts the access key ``ACCESS_KEY`` / ``SECRET_KEY`` (SigV4, region
  ``us-east-1``; channel key ``fake.sigv4_key``) and the Bedrock API key ``API_KEY``
  (channel key ``fake.api_key_channel_key``). It validates every request against the
  request schemas and fails the test at teardown when one violated them; a test that sends
  invalid bodies on purpose opts out with ``@pytest.mark.allow_upstream_violations``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_bedrock.testing.fake import FakeBedrock


@pytest_asyncio.fixture
async def fake_bedrock(request: pytest.FixtureRequest) -> AsyncIterator[FakeBedrock]:
    async with FakeBedrock() as fake:
        yield fake
    assert_no_violations(fake, request.node, "Bedrock")
