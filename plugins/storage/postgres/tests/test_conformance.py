"""The core's storage conformance suite on PostgreSQL: each test gets its own
``faregate_test_<uuid>`` database, dropped afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import unquote, urlsplit

import asyncpg
import pytest
import pytest_asyncio

from faregate.testing.conformance import StorageConformance
from faregate.testing.pytest_plugin import POSTGRES_URL, unique_db_name


async def _server() -> tuple[asyncpg.Connection, str]:
    parts = urlsplit(POSTGRES_URL)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5432
    try:
        conn = await asyncpg.connect(host=host, port=port, user=unquote(parts.username or "postgres"),
                                     password=unquote(parts.password) if parts.password else None,
                                     database="postgres", timeout=5)
    except OSError as exc:  # connection refused / unreachable: no server
        pytest.skip(f"no PostgreSQL server at {host}:{port}: {exc}")
    return conn, f"{parts.scheme}://{parts.netloc}"


@pytest.mark.postgres
class TestPostgres(StorageConformance):
    backend_name = "postgres"

    @pytest_asyncio.fixture
    async def db_url(self) -> AsyncIterator[str]:
        conn, base = await _server()
        name = unique_db_name()
        try:
            await conn.execute(f'CREATE DATABASE "{name}" ENCODING \'UTF8\' TEMPLATE template0')
            yield f"{base}/{name}?maxsize=20"
        finally:
            # FORCE: a test that failed half-way may have left connections open
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await conn.close()
