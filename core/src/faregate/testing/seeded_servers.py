"""A database migrated once per test process on a MariaDB/MySQL or PostgreSQL server, copied into
each fresh database of the storage conformance tests that start from the migrated schema
(:meth:`~faregate.testing.conformance.StorageConformance.storage`); the tests of the migrations
themselves still migrate. Applying every migration costs a few seconds a database on these
engines (tortoise replays each migration's model state); a copy costs a fraction of that:
PostgreSQL copies a template database, MariaDB's tables are made again from ``SHOW CREATE
TABLE`` and their rows (tortoise's record of the migrations) copied. Any other engine migrates.
"""

from __future__ import annotations

import asyncio
import atexit
import copy
from collections.abc import Awaitable, Callable
from typing import Any

from faregate import jsonutil
from faregate.db.storage import migrate
from faregate.testing.pytest_plugin import unique_db_name

MYSQL_ENGINE = "tortoise.backends.mysql"
POSTGRES_ENGINE = "tortoise.backends.asyncpg"

#: the template database of each (engine, server, apps)
_templates: dict[str, str] = {}


async def migrated(config: dict[str, Any]) -> None:
    """Give the empty database ``config`` names the migrated schema: a copy of a template made
    once per process (MariaDB/MySQL, PostgreSQL), else the migrations themselves."""
    connection = config["connections"]["default"]
    engine = connection.get("engine") if isinstance(connection, dict) else None
    if engine not in _COPIES:
        await migrate(config)
        return
    credentials = connection["credentials"]
    key = jsonutil.dumps_str([engine, credentials["host"], credentials["port"], config["apps"]])
    template = _templates.get(key)
    if template is None:
        template = unique_db_name("faregate_template")
        await _run(engine, credentials, [_create(engine, template)])
        atexit.register(_drop_template, engine, dict(credentials), template)
        template_config = copy.deepcopy(config)
        template_config["connections"]["default"]["credentials"]["database"] = template
        await migrate(template_config)
        _templates[key] = template
    await _COPIES[engine](credentials, template)


def _create(engine: str, name: str) -> str:
    if engine == POSTGRES_ENGINE:
        return f"CREATE DATABASE \"{name}\" ENCODING 'UTF8' TEMPLATE template0"
    return f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"


async def _copy_postgres(credentials: dict[str, Any], template: str) -> None:
    # the test's database is new and empty: made again as a copy of the template
    database = credentials["database"]
    await _run(POSTGRES_ENGINE, credentials, [f'DROP DATABASE "{database}"',
                                              f'CREATE DATABASE "{database}" TEMPLATE "{template}"'])


async def _copy_mysql(credentials: dict[str, Any], template: str) -> None:
    import aiomysql  # type: ignore[import-untyped]  # no stubs published

    conn = await aiomysql.connect(host=credentials["host"], port=credentials["port"], user=credentials["user"],
                                  password=credentials["password"], db=credentials["database"], autocommit=True)
    try:
        async with conn.cursor() as cursor:
            await cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
                                 "AND table_type = 'BASE TABLE'", (template,))
            tables = [str(row[0]) for row in await cursor.fetchall()]
            await cursor.execute("SET FOREIGN_KEY_CHECKS = 0")  # this session's: tables in any order
            for table in tables:
                await cursor.execute(f"SHOW CREATE TABLE `{template}`.`{table}`")
                (_, statement) = await cursor.fetchone()
                await cursor.execute(statement)  # unqualified: made in the test's database
                await cursor.execute(f"INSERT INTO `{table}` SELECT * FROM `{template}`.`{table}`")
    finally:
        conn.close()


_COPIES: dict[str, Callable[[dict[str, Any], str], Awaitable[None]]] = {
    POSTGRES_ENGINE: _copy_postgres, MYSQL_ENGINE: _copy_mysql}


async def _run(engine: str, credentials: dict[str, Any], statements: list[str]) -> None:
    """``statements`` on a connection of their own to the server (its maintenance database)."""
    if engine == POSTGRES_ENGINE:
        import asyncpg  # type: ignore[import-untyped]  # no stubs published

        pg = await asyncpg.connect(host=credentials["host"], port=credentials["port"], user=credentials["user"],
                                   password=credentials["password"], database="postgres")
        try:
            for statement in statements:
                await pg.execute(statement)
        finally:
            await pg.close()
        return
    import aiomysql

    conn = await aiomysql.connect(host=credentials["host"], port=credentials["port"], user=credentials["user"],
                                  password=credentials["password"], autocommit=True)
    try:
        async with conn.cursor() as cursor:
            for statement in statements:
                await cursor.execute(statement)
    finally:
        conn.close()


def _drop_template(engine: str, credentials: dict[str, Any], template: str) -> None:
    quoted = f'"{template}"' if engine == POSTGRES_ENGINE else f"`{template}`"
    try:
        asyncio.run(_run(engine, credentials, [f"DROP DATABASE IF EXISTS {quoted}"]))
    except Exception:  # noqa: BLE001 - the server may be gone at exit; the name is unique
        pass
