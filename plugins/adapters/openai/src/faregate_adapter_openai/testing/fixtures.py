"""Pytest fixtures of the OpenAI plugin (entry point ``pytest11``), for its own tests, the
core's and any plugin's that needs an OpenAI upstream:

* ``fake_openai`` — a :class:`~faregate_adapter_openai.testing.FakeOpenAI` on a loopback
  port, accepting any key. It validates every chat request against OpenAI's published
  request schema and fails the test at teardown when one violated it (what the gateway
  sends upstream is part of what a test checks); a test that sends invalid bodies on
  purpose opts out with ``@pytest.mark.allow_upstream_violations``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate_adapter_openai.testing.server import FakeOpenAI

#: the marker that lets a test's fake upstream receive schema-invalid requests
ALLOW_VIOLATIONS = "allow_upstream_violations"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{ALLOW_VIOLATIONS}: the fake upstreams may receive requests that "
                                       "violate the vendor's request schema")


@pytest_asyncio.fixture
async def fake_openai(request: pytest.FixtureRequest) -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake
    if request.node.get_closest_marker(ALLOW_VIOLATIONS) is None:
        assert not fake.violations, f"requests sent to fake_openai violate OpenAI's schema: {fake.violations}"
