"""Checks for a plugin's own tables (``register_db_models``)."""

from __future__ import annotations

from typing import Any

from faregate.contracts import DbModels


async def pending_migrations(tables: DbModels) -> list[Any]:
    """The operations ``makemigrations`` would write for ``tables`` (empty when every
    model change came with its migration). The core's models are loaded beside them,
    as in a running gateway."""
    from tortoise.context import TortoiseContext
    from tortoise.migrations.autodetector import MigrationAutodetector

    from faregate.db.storage import CORE_APP, MIGRATIONS_MODULE, MODELS_MODULE

    apps = {
        CORE_APP: {"models": [MODELS_MODULE], "migrations": MIGRATIONS_MODULE, "default_connection": "default"},
        tables.app: {"models": [tables.models], "migrations": tables.migrations, "default_connection": "default"},
    }
    config = {"connections": {"default": "sqlite://:memory:"}, "apps": apps, "use_tz": False}
    async with TortoiseContext() as ctx:
        await ctx.init(config=config)
        assert ctx.apps is not None
        writers = await MigrationAutodetector(ctx.apps, apps).changes()
    return [op for writer in writers for op in writer.operations]
