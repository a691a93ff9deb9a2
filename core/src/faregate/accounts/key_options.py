"""new-api's ``token_setting.*``: the rules for the API keys users create."""

from __future__ import annotations

from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.transactions import in_transaction

from faregate.accounts.keys import issue_key
from faregate.db import models as m
from faregate.security.crypto import SecretBox
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec
from faregate.state.options import Options

MAX_USER_TOKENS = "token_setting.max_user_tokens"

TOKEN_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(MAX_USER_TOKENS, "1000", "The most API keys one user may have (creating one more is refused; "
               "existing ones stay).", specs.integer(0, 1_000_000)),
)


def too_many_keys_message(limit: int) -> str:
    """new-api's refusal, word for word (its console shows it as it is)."""
    return f"已达到最大令牌数量限制 ({limit})"


class KeyCapReached(Exception):
    """The owner already has ``token_setting.max_user_tokens`` keys; the message is new-api's."""


async def issue_key_under_cap(box: SecretBox, options: Options, *, user_id: int,
                              **fields: Any) -> tuple[m.Token, str]:
    """:func:`issue_key` unless ``user_id`` has ``token_setting.max_user_tokens`` keys already
    (raises :class:`KeyCapReached`): the one rule the key API and ``faregate admin create-key``
    both apply. The count and the insert share a transaction that first locks the owner's row,
    so concurrent creates (other requests, workers, nodes, the CLI) queue there and the last
    one to count sees every key before it."""
    limit = int(options.value(MAX_USER_TOKENS))
    async with in_transaction() as conn:
        await _lock_owner(conn, user_id)
        if await m.Token.filter(user_id=user_id).using_db(conn).count() >= limit:
            raise KeyCapReached(too_many_keys_message(limit))
        return await issue_key(box, user_id=user_id, using_db=conn, **fields)


async def _lock_owner(conn: BaseDBAsyncClient, user_id: int) -> None:
    """Hold ``user_id``'s row until ``conn``'s transaction ends. MariaDB and PostgreSQL lock the
    row (``SELECT … FOR UPDATE``). SQLite has no row locks: a write as the transaction's first
    statement takes the database's write lock at once, as ``BEGIN IMMEDIATE`` would (other
    processes wait out the busy timeout); the workers' own tasks already queue on the client."""
    owner = m.User.filter(id=user_id).using_db(conn)
    if conn.capabilities.support_for_update:
        await owner.select_for_update().only("id")
    else:
        await conn.execute_query(f"UPDATE {m.User._meta.db_table} SET id = id WHERE id = ?", [user_id])
