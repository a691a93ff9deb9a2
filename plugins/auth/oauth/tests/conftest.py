"""A gateway wired to a fake OAuth provider of each flavour, and a browser that walks the
provider's authorize step."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_auth_oauth.providers import PROVIDERS
from faregate_auth_oauth.testing import USERS, FakeOAuthProvider, OAuthSite, configure


@pytest_asyncio.fixture(params=sorted(PROVIDERS))
async def site(request: pytest.FixtureRequest, make_gateway: Callable[..., Awaitable[GatewayServer]]
               ) -> AsyncIterator[OAuthSite]:
    async with FakeOAuthProvider(request.param, user=dict(USERS[request.param])) as fake:
        settings: dict[str, Any] = {"oauth_private_addresses": "allow", f"oauth_{fake.flavor}_base_url": fake.base_url}
        gw = await make_gateway(settings=settings)
        admin = AdminClient(gw.base_url)
        await admin.setup_root()
        await configure(admin, fake)
        yield OAuthSite(gw, admin, fake)
        await admin.close()
