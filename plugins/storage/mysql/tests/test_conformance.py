"""The core's storage conformance suite on MariaDB/MySQL: each test gets its own
``faregate_test_<uuid>`` database, dropped afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from faregate.testing.conformance import StorageConformance


@pytest.mark.mariadb
# the plugin silences this note at import; pytest resets warning filters per test
@pytest.mark.filterwarnings("ignore:Table 'tortoise_migrations' already exists")
class TestMariaDB(StorageConformance):
    backend_name = "mysql"

    @pytest_asyncio.fixture
    async def db_url(self, mariadb_url: str) -> AsyncIterator[str]:
        yield mariadb_url  # the core's fixture: a fresh database, dropped afterwards
