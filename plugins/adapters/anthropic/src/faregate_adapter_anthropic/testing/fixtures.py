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

from faregate_adapter_anthropic.testing.fake import FakeAnthropic

#: the one key ``fake_anthropic`` accepts (``x-api-key``)
FAKE_ANTHROPIC_KEY = "sk-ant-upstream"
#: the marker that lets a test's fake upstream receive schema-invalid requests
ALLOW_VIOLATIONS = "allow_upstream_violations"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{ALLOW_VIOLATIONS}: the fake upstreams may receive requests that "
                                       "violate the vendor's request schema")


@pytest_asyncio.fixture
async def fake_anthropic(request: pytest.FixtureRequest) -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(key=FAKE_ANTHROPIC_KEY) as fake:
        yield fake
    if request.node.get_closest_marker(ALLOW_VIOLATIONS) is None:
        assert not fake.violations, f"requests sent to fake_anthropic violate Anthropic's schema: {fake.violations}"
