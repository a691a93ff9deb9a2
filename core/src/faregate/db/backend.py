"""Storage engines and a plugin's own tables: what a storage plugin hands over (re-exported by
:mod:`faregate.contracts` and :mod:`faregate.api`)."""

from __future__ import annotations

import contextlib
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class StorageBackend:
    """A database engine: ``name`` chosen by ``FAREGATE_DB_URL``'s scheme(s)."""

    name: str
    schemes: tuple[str, ...]
    description: str = ""

    def tortoise_connection(self, url: str) -> dict[str, Any] | str:
        """The tortoise connection config for ``url``; defaults to the URL itself."""
        return url

    def migration_lock(self, url: str) -> AbstractAsyncContextManager[object]:
        """Held while migrations run, so that nodes started at once against one database
        migrate one after the other (the second finds nothing left to apply) instead of
        both creating the same tables. Default: no lock."""
        return contextlib.nullcontext()


@dataclass(slots=True, frozen=True)
class DbModels:
    """A plugin's own tables: ``app`` (a short unique label, e.g. ``payments_stripe``),
    the module holding its tortoise models, and the package of its migrations
    (tortoise migration files, like the core's). ``faregate migrate`` applies them on
    every engine after the core's."""

    app: str
    models: str
    migrations: str
