"""The local SMTP server every test of this plugin sends to, and a gateway whose per-IP send
limit (2 per 30 s by default, tested in tests/security/test_email_codes.py) leaves these
tests, all from one address, room to send."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator

import pytest
import pytest_asyncio

from faregate.testing.harness import GatewayServer
from faregate_auth_email.testing import LocalSMTP


@pytest_asyncio.fixture
async def gateway(make_gateway: Callable[..., Awaitable[GatewayServer]]) -> GatewayServer:
    return await make_gateway(settings={"email_sends_per_ip": 100})


@pytest.fixture
def smtp() -> Iterator[LocalSMTP]:
    server = LocalSMTP()
    server.start()
    yield server
    server.stop()
