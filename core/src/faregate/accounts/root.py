"""Creating the root user, once (``POST /api/setup``, ``faregate admin create-root``)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from tortoise.exceptions import IntegrityError, OperationalError
from tortoise.transactions import in_transaction

from faregate import __version__
from faregate.db import models as m
from faregate.security.passwords import hash_password_async

ROOT_INITIAL_QUOTA = 100_000_000  # new-api gives a fresh root $200


class AlreadyInitialised(Exception):
    """There is a root user already."""


async def create_root(username: str, password: str, options: Mapping[str, str] | None = None) -> m.User:
    """The root user; :class:`AlreadyInitialised` if the system has one."""
    if await m.Setup.exists() or await m.User.filter(role=m.ROLE_ROOT).exists():
        raise AlreadyInitialised
    password_hash = await hash_password_async(password)  # before the transaction: hashing is slow
    now = int(time.time())
    try:
        async with in_transaction() as conn:
            # the fixed id makes a concurrent second setup fail on the primary key
            await m.Setup.create(id=1, version=__version__, initialized_at=now, using_db=conn)
            user = await m.User.create(username=username, password_hash=password_hash,
                                       display_name="Root User", role=m.ROLE_ROOT, quota=ROOT_INITIAL_QUOTA,
                                       created_at=now, using_db=conn)
            for key, value in (options or {}).items():
                await m.Option.update_or_create(key=key, defaults={"value": value}, using_db=conn)
    except (IntegrityError, OperationalError):
        raise AlreadyInitialised from None
    return user
