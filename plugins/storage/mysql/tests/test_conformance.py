"""The core's storage conformance suite on MariaDB/MySQL: each test gets its own
``faregate_test_<uuid>`` database, dropped afterwards."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import unquote, urlsplit

import aiomysql
import pymysql
import pytest
import pytest_asyncio

from faregate.testing.conformance import StorageConformance
from faregate.testing.pytest_plugin import MARIADB_URL, unique_db_name


async def _server() -> tuple[aiomysql.Connection, str]:
    parts = urlsplit(MARIADB_URL)
    user, password = unquote(parts.username or "root"), unquote(parts.password or "")
    host, port = parts.hostname or "127.0.0.1", parts.port or 3306
    try:
        conn = await aiomysql.connect(host=host, port=port, user=user, password=password, autocommit=True,
                                      connect_timeout=5)
    except pymysql.err.OperationalError as exc:
        if exc.args[0] != 2003:  # only "can't connect" means no server; anything else is a failure
            raise
        pytest.skip(f"no MariaDB/MySQL server at {host}:{port}: {exc}")
    return conn, f"{parts.scheme}://{parts.netloc}"


@pytest.mark.mariadb
# the plugin silences this note at import; pytest resets warning filters per test
@pytest.mark.filterwarnings("ignore:Table 'tortoise_migrations' already exists")
class TestMariaDB(StorageConformance):
    backend_name = "mysql"

    @pytest_asyncio.fixture
    async def db_url(self) -> AsyncIterator[str]:
        conn, base = await _server()
        name = unique_db_name()
        try:
            async with conn.cursor() as cur:
                await cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
            yield f"{base}/{name}?maxsize=20"
        finally:
            async with conn.cursor() as cur:
                await cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
            conn.close()
