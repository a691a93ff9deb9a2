"""Issuing a relay API key: kept as a SHA-256 hash for lookup and encrypted for the
owner's reveal, never in clear."""

from __future__ import annotations

import time
from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.transactions import in_transaction

from faregate.db import models as m
from faregate.security.crypto import SecretBox, key_hash, mask_key, new_api_key


async def issue_key(box: SecretBox, *, user_id: int, key: str | None = None,
                    using_db: BaseDBAsyncClient | None = None, **fields: Any) -> tuple[m.Token, str]:
    """Create a key for ``user_id`` with the token ``fields`` given (name, remain_quota, …);
    ``key`` keeps a key that already exists elsewhere (without ``sk-``), else a new one is
    drawn. Returns the row and the key (shown once)."""
    key = key or new_api_key()
    fields.setdefault("created_time", int(time.time()))
    if using_db is not None:
        return await _create(box, user_id, key, using_db, fields), key
    async with in_transaction() as conn:
        return await _create(box, user_id, key, conn, fields), key


async def _create(box: SecretBox, user_id: int, key: str, conn: BaseDBAsyncClient,
                  fields: dict[str, Any]) -> m.Token:
    row = await m.Token.create(user_id=user_id, key_hash=key_hash(key), key_enc="", key_mask=mask_key(key),
                               using_db=conn, **fields)
    # the row id is part of the ciphertext's associated data: a copied ciphertext opens nowhere else
    row.key_enc = box.encrypt(key, f"token:{row.id}")
    await row.save(update_fields=["key_enc"], using_db=conn)
    return row
