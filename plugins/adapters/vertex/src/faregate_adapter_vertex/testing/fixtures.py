"""Pytest fixtures of the Vertex plugin (entry point ``pytest11``):

* ``fake_google_oauth`` — a :class:`~faregate_adapter_vertex.testing.FakeGoogleOAuth` token
  endpoint on a loopback port;
* ``vertex_account`` — a test service account whose ``token_uri`` is that endpoint (its
  ``key`` is a channel key: the key file's JSON), known to it;
* ``fake_vertex`` — a :class:`~faregate_adapter_vertex.testing.FakeVertex` that takes that
  endpoint's tokens for the account's project, and the API key ``API_KEY``. It validates
  every request against Vertex's schemas and fails the test at teardown when one violated
  them (opt out with ``@pytest.mark.allow_upstream_violations``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_vertex.testing.accounts import TestServiceAccount, make_service_account
from faregate_adapter_vertex.testing.fake import FakeVertex
from faregate_adapter_vertex.testing.oauth import FakeGoogleOAuth


@pytest_asyncio.fixture
async def fake_google_oauth() -> AsyncIterator[FakeGoogleOAuth]:
    async with FakeGoogleOAuth() as oauth:
        yield oauth


@pytest.fixture
def vertex_account(fake_google_oauth: FakeGoogleOAuth) -> TestServiceAccount:
    return fake_google_oauth.add(make_service_account(fake_google_oauth.token_uri))


@pytest_asyncio.fixture
async def fake_vertex(request: pytest.FixtureRequest, fake_google_oauth: FakeGoogleOAuth,
                      vertex_account: TestServiceAccount) -> AsyncIterator[FakeVertex]:
    async with FakeVertex(oauth=fake_google_oauth, project=vertex_account.project_id) as fake:
        yield fake
    assert_no_violations(fake, request.node, "Vertex AI")
