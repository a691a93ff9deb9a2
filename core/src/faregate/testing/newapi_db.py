"""A new-api database as new-api's GORM AutoMigrate creates it, written from the documented
schema (model/*.go: users, tokens, channels, abilities, options, redemptions, top_ups,
logs), for SQLite, MariaDB and PostgreSQL, with rows an operator's database holds: a
root and a user with bcrypt passwords, keys, a multi-key channel, abilities, options
(known, unknown, invalid), redemption codes, top-ups and logs, and the awkward rows too
(a soft-deleted user, a channel of a type nobody serves, a too-long name, a repeated
request id)."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import bcrypt
import pytest

from faregate.testing.pytest_plugin import POSTGRES_URL, unique_db_name

NOW = int(time.time())
PASSWORD = "newapi-pass-1"  # the users' password in new-api
ROOT_ACCESS_TOKEN = "a" * 32
USER_KEY = "Zx" * 24  # 48 characters, stored without sk-, as new-api does
ROOT_KEY = "Rk" * 24

# GORM's column types per engine (int → bigint, string → longtext / text, bool → numeric / boolean)
TYPES = {
    "sqlite": {"pk": "integer PRIMARY KEY AUTOINCREMENT", "int": "integer", "text": "text", "bool": "numeric",
               "float": "real", "vc": "varchar({n})", "char": "char({n})", "json": "JSON", "ts": "datetime"},
    "mysql": {"pk": "bigint AUTO_INCREMENT PRIMARY KEY", "int": "bigint", "text": "longtext", "bool": "boolean",
              "float": "double", "vc": "varchar({n})", "char": "char({n})", "json": "JSON", "ts": "datetime(3)"},
    "postgres": {"pk": "bigserial PRIMARY KEY", "int": "bigint", "text": "text", "bool": "boolean",
                 "float": "decimal", "vc": "varchar({n})", "char": "char({n})", "json": "JSON", "ts": "timestamptz"},
}

# (column, type[, size]) per table; names as GORM writes them
TABLES: dict[str, list[tuple[Any, ...]]] = {
    "users": [("id", "pk"), ("username", "vc", 191), ("password", "text"), ("display_name", "vc", 191),
              ("role", "int"), ("status", "int"), ("email", "vc", 191), ("github_id", "vc", 191),
              ("discord_id", "vc", 191), ("oidc_id", "vc", 191), ("wechat_id", "vc", 191),
              ("telegram_id", "vc", 191), ("access_token", "char", 32), ("quota", "int"), ("used_quota", "int"),
              ("request_count", "int"), ("group", "vc", 64), ("aff_code", "vc", 32), ("aff_count", "int"),
              ("aff_quota", "int"), ("aff_history", "int"), ("inviter_id", "int"), ("deleted_at", "ts"),
              ("linux_do_id", "vc", 191), ("setting", "text"), ("remark", "vc", 255), ("stripe_customer", "vc", 64),
              ("created_at", "int"), ("last_login_at", "int")],
    "tokens": [("id", "pk"), ("user_id", "int"), ("key", "char", 48), ("status", "int"), ("name", "vc", 191),
               ("created_time", "int"), ("accessed_time", "int"), ("expired_time", "int"), ("remain_quota", "int"),
               ("unlimited_quota", "bool"), ("model_limits_enabled", "bool"), ("model_limits", "text"),
               ("allow_ips", "text"), ("used_quota", "int"), ("group", "vc", 191), ("cross_group_retry", "bool"),
               ("deleted_at", "ts")],
    "channels": [("id", "pk"), ("type", "int"), ("key", "text"), ("open_ai_organization", "text"),
                 ("test_model", "text"), ("status", "int"), ("name", "vc", 191), ("weight", "int"),
                 ("created_time", "int"), ("test_time", "int"), ("response_time", "int"), ("base_url", "vc", 191),
                 ("other", "text"), ("balance", "float"), ("balance_updated_time", "int"), ("models", "text"),
                 ("group", "vc", 64), ("used_quota", "int"), ("model_mapping", "text"),
                 ("status_code_mapping", "vc", 1024), ("priority", "int"), ("auto_ban", "int"),
                 ("other_info", "text"), ("tag", "vc", 191), ("setting", "text"), ("param_override", "text"),
                 ("header_override", "text"), ("remark", "vc", 255), ("channel_info", "json"), ("settings", "text")],
    "abilities": [("group", "vc", 64), ("model", "vc", 255), ("channel_id", "int"), ("enabled", "bool"),
                  ("priority", "int"), ("weight", "int"), ("tag", "vc", 191)],
    "options": [("key", "vc", 191), ("value", "text")],
    "redemptions": [("id", "pk"), ("user_id", "int"), ("key", "char", 32), ("status", "int"), ("name", "vc", 191),
                    ("quota", "int"), ("created_time", "int"), ("redeemed_time", "int"), ("used_user_id", "int"),
                    ("deleted_at", "ts"), ("expired_time", "int")],
    "top_ups": [("id", "pk"), ("user_id", "int"), ("amount", "int"), ("money", "float"), ("trade_no", "vc", 255),
                ("payment_method", "vc", 50), ("payment_provider", "vc", 50), ("create_time", "int"),
                ("complete_time", "int"), ("status", "text")],
    "logs": [("id", "pk"), ("user_id", "int"), ("created_at", "int"), ("type", "int"), ("content", "text"),
             ("username", "vc", 191), ("token_name", "vc", 191), ("model_name", "vc", 191), ("quota", "int"),
             ("prompt_tokens", "int"), ("completion_tokens", "int"), ("use_time", "int"), ("is_stream", "bool"),
             ("channel_id", "int"), ("token_id", "int"), ("group", "vc", 191), ("ip", "vc", 191),
             ("request_id", "vc", 64), ("other", "text")],
}
KEYS = {"abilities": '("group", model, channel_id)', "options": '("key")'}
#: unique indexes: (name, table, column)
UNIQUE = (("idx_users_username", "users", "username"), ("idx_tokens_key", "tokens", "key"),
          ("idx_top_ups_trade_no", "top_ups", "trade_no"))


@dataclass(frozen=True)
class Schema:
    """A gateway's tables as GORM creates them (one-api's are another: faregate.testing.oneapi_db)."""

    tables: dict[str, list[tuple[Any, ...]]]
    keys: dict[str, str]
    unique: tuple[tuple[str, str, str], ...]


NEW_API = Schema(TABLES, KEYS, UNIQUE)


def ddl(dialect: str, schema: Schema = NEW_API) -> list[str]:
    quote = "`" if dialect == "mysql" else '"'
    types = TYPES[dialect]
    out = []
    for table, columns in schema.tables.items():
        parts = []
        for name, kind, *size in columns:
            sql_type = types[kind].format(n=size[0]) if size else types[kind]
            parts.append(f"{quote}{name}{quote} {sql_type}")
        if table in schema.keys:
            parts.append("PRIMARY KEY " + schema.keys[table].replace('"', quote))
        out.append(f"CREATE TABLE {table} ({', '.join(parts)})")
    out += [f"CREATE UNIQUE INDEX {index} ON {table} ({quote}{column}{quote})"
            for index, table, column in schema.unique]
    return out


def password_hash() -> str:
    return bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()


#: a param_override as new-api's channel editor writes them: a plain field beside the
#: operations, sync_fields between a header and the body, a set_header token map
NEWAPI_PARAM_OVERRIDE = (
    '{"temperature": 0.3, "operations": ['
    '{"mode": "sync_fields", "from": "header:session_id", "to": "json:prompt_cache_key"}, '
    '{"mode": "set_header", "path": "anthropic-beta", '
    '"value": {"context-1m-2025-08-07": null, "$append": ["interleaved-thinking-2025-05-14"]}}]}')


def rows(upstream_url: str, upstream_key: str) -> dict[str, list[dict[str, Any]]]:
    hashed = password_hash()
    return {
        "users": [
            {"id": 1, "username": "root", "password": hashed, "display_name": "Root User", "role": 100, "status": 1,
             "access_token": ROOT_ACCESS_TOKEN, "quota": 100_000_000, "group": "default", "aff_code": "Ab1c",
             "created_at": NOW, "setting": ""},
            {"id": 7, "username": "alice", "password": hashed, "display_name": "Alice", "role": 1, "status": 1,
             "email": "alice@example.com", "github_id": "12345", "quota": 2_500_000, "used_quota": 1234,
             "request_count": 3, "group": "vip", "aff_code": "Zz9y", "inviter_id": 1, "created_at": NOW},
            {"id": 8, "username": "gone", "password": hashed, "role": 1, "status": 1,
             "deleted_at": "2025-01-01 00:00:00"},
            {"id": 9, "username": "x" * 80, "password": hashed, "role": 1, "status": 1},
        ],
        "tokens": [
            {"id": 3, "user_id": 1, "key": ROOT_KEY, "status": 1, "name": "root-key", "created_time": NOW,
             "expired_time": -1, "remain_quota": 0, "unlimited_quota": True, "model_limits_enabled": False,
             "model_limits": "", "allow_ips": "", "group": "", "cross_group_retry": False},
            {"id": 5, "user_id": 7, "key": USER_KEY, "status": 1, "name": "alice-key", "created_time": NOW,
             "expired_time": -1, "remain_quota": 2_000_000, "unlimited_quota": False,
             "model_limits_enabled": True, "model_limits": "gpt-4o-mini,gpt-4o", "allow_ips": "", "group": "",
             "cross_group_retry": False},
        ],
        "channels": [
            {"id": 4, "type": 1, "key": upstream_key, "status": 1, "name": "fake openai", "weight": 0,
             "created_time": NOW, "base_url": upstream_url, "models": "gpt-4o-mini,gpt-4o", "group": "default,vip",
             "priority": 0, "auto_ban": 1, "model_mapping": "", "channel_info": '{"is_multi_key": false}',
             "open_ai_organization": "org-1", "settings": '{"azure_responses_version": ""}'},
            {"id": 6, "type": 1, "key": f"{upstream_key}\nsk-second", "status": 2, "name": "multi", "weight": 3,
             "created_time": NOW, "base_url": upstream_url, "models": "gpt-4o", "group": "default", "priority": 5,
             "auto_ban": 1, "tag": "eu", "param_override": NEWAPI_PARAM_OVERRIDE, "settings": "{not json",
             "channel_info": '{"is_multi_key": true, "multi_key_size": 2, "multi_key_status_list": {"1": 3}, '
                             '"multi_key_polling_index": 0, "multi_key_mode": "polling"}'},
            {"id": 11, "type": 9999, "key": "k", "status": 1, "name": "nobody serves this", "models": "m",
             "group": "default", "created_time": NOW},
            {"id": 12, "type": 1, "key": "k", "status": 1, "name": "metadata", "models": "m", "group": "default",
             "base_url": "http://169.254.169.254/latest", "created_time": NOW},
        ],
        "abilities": [
            {"group": "default", "model": "gpt-4o-mini", "channel_id": 4, "enabled": True, "priority": 0, "weight": 0},
            {"group": "vip", "model": "gpt-4o-mini", "channel_id": 4, "enabled": True, "priority": 0, "weight": 0},
            {"group": "default", "model": "gpt-4o", "channel_id": 4, "enabled": True, "priority": 0, "weight": 0},
            {"group": "vip", "model": "gpt-4o", "channel_id": 4, "enabled": True, "priority": 0, "weight": 0},
            {"group": "default", "model": "gpt-4o", "channel_id": 6, "enabled": False, "priority": 5, "weight": 3,
             "tag": "eu"},
            {"group": "default", "model": "m", "channel_id": 11, "enabled": True, "priority": 0, "weight": 0},
        ],
        "options": [
            {"key": "QuotaPerUnit", "value": "500000"},
            {"key": "ModelRatio", "value": '{"gpt-4o-mini": 0.075}'},
            {"key": "RetryTimes", "value": "not a number"},
            {"key": "SomeNewApiOnlyThing", "value": "1"},
        ],
        "redemptions": [
            {"id": 1, "user_id": 1, "key": "f" * 32, "status": 1, "name": "promo", "quota": 500_000,
             "created_time": NOW, "expired_time": 0},
            {"id": 2, "user_id": 1, "key": "e" * 32, "status": 3, "name": "used", "quota": 100, "created_time": NOW,
             "redeemed_time": NOW, "used_user_id": 7, "expired_time": 0},
        ],
        "top_ups": [
            {"id": 1, "user_id": 7, "amount": 10, "money": 72.5, "trade_no": f"USR7NOabc123{NOW}",
             "payment_method": "alipay", "payment_provider": "epay", "create_time": NOW, "complete_time": NOW,
             "status": "success"},
        ],
        "logs": [
            {"id": 1, "user_id": 7, "created_at": NOW - 60, "type": 2, "content": "", "username": "alice",
             "token_name": "alice-key", "model_name": "gpt-4o-mini", "quota": 150, "prompt_tokens": 10,
             "completion_tokens": 20, "use_time": 1, "is_stream": False, "channel_id": 4, "token_id": 5,
             "group": "vip", "ip": "", "request_id": "req-1", "other": '{"model_ratio": 0.075}'},
            {"id": 2, "user_id": 7, "created_at": NOW - 30, "type": 5, "content": "upstream error",
             "username": "alice", "token_name": "alice-key", "model_name": "gpt-4o-mini", "quota": 0,
             "is_stream": True, "channel_id": 4, "token_id": 5, "group": "vip", "request_id": "req-1", "other": ""},
            {"id": 3, "user_id": 1, "created_at": NOW - 10, "type": 1, "content": "top-up", "username": "root",
             "quota": 500_000, "request_id": "", "other": ""},
        ],
    }


def statements(dialect: str, data: dict[str, list[dict[str, Any]]],
               schema: Schema = NEW_API) -> list[tuple[str, list[Any]]]:
    """The SQL that creates the tables and rows (placeholders: ``?`` for SQLite, ``%s`` for
    MySQL, ``$n`` for PostgreSQL)."""
    quote = "`" if dialect == "mysql" else '"'
    out: list[tuple[str, list[Any]]] = [(statement, []) for statement in ddl(dialect, schema)]
    for table, items in data.items():
        for item in items:
            names = ", ".join(f"{quote}{n}{quote}" for n in item)
            marks = ", ".join(_mark(dialect, i + 1) for i in range(len(item)))
            out.append((f"INSERT INTO {table} ({names}) VALUES ({marks})", [_value(dialect, v) for v in item.values()]))
    return out


def sqlite_source(path: Path, data: dict[str, list[dict[str, Any]]], schema: Schema = NEW_API) -> str:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        for sql, params in statements("sqlite", data, schema):
            conn.execute(sql, params)
        conn.commit()
    return f"sqlite://{path}"


async def mariadb_source(url: str, data: dict[str, list[dict[str, Any]]], schema: Schema = NEW_API) -> None:
    import aiomysql  # type: ignore[import-untyped]

    parts = urlsplit(url)
    conn = await aiomysql.connect(host=parts.hostname, port=parts.port or 3306, user=unquote(parts.username or "root"),
                                  password=unquote(parts.password or ""), db=parts.path.lstrip("/"), autocommit=True)
    try:
        async with conn.cursor() as cur:
            for sql, params in statements("mysql", data, schema):
                await cur.execute(sql, params)
    finally:
        conn.close()


@contextlib.asynccontextmanager
async def postgres_database() -> AsyncIterator[str]:
    """A fresh PostgreSQL database (dropped afterwards); skips without a server."""
    import asyncpg  # type: ignore[import-untyped]

    base = urlsplit(POSTGRES_URL)
    try:
        admin = await asyncpg.connect(host=base.hostname, port=base.port or 5432,
                                      user=unquote(base.username or "postgres"), database="postgres", timeout=5)
    except OSError as exc:
        pytest.skip(f"no PostgreSQL server: {exc}")
    name = unique_db_name("faregate_import")
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{base.scheme}://{base.netloc}/{name}"
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def postgres_source(url: str, data: dict[str, list[dict[str, Any]]], schema: Schema = NEW_API) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        for sql, params in statements("postgres", data, schema):
            await conn.execute(sql, *params)
    finally:
        await conn.close()


def _value(dialect: str, value: Any) -> Any:
    if dialect != "postgres":
        return value
    if isinstance(value, float):  # numeric
        return Decimal(str(value))
    if isinstance(value, str) and value.startswith("2025-"):  # timestamptz
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value


def _mark(dialect: str, n: int) -> str:
    return {"sqlite": "?", "mysql": "%s", "postgres": f"${n}"}[dialect]
