"""A one-api database (songquanpeng/one-api, the project new-api forked from) as its GORM
AutoMigrate creates it, written from the documented schema (model/*.go: users, tokens,
channels, abilities, options, redemptions, logs; one-api has no top-ups table), with the
rows an operator's database holds and the places where one-api differs from new-api:

* channel types numbered as one-api numbers them (35 is Cohere there, MiniMax in new-api;
  29 Groq, 36 DeepSeek, 38 DeepL …), a channel's settings in its ``config`` JSON (Azure's
  API version) and its ``system_prompt`` column;
* a key's allowed models in ``models`` and allowed networks in ``subnet``;
* a log's duration in milliseconds (``elapsed_time``);
* fewer columns everywhere (no soft delete, no invitation rewards, no ability weight).

For SQLite, MariaDB and PostgreSQL, through :mod:`faregate.testing.newapi_db`'s writers."""

from __future__ import annotations

from typing import Any

from faregate.testing.newapi_db import NOW, Schema

PASSWORD = "oneapi-pass-1"
ROOT_ACCESS_TOKEN = "b" * 32
USER_KEY = "Oa" * 24  # 48 characters, stored without sk-, as one-api does
ROOT_KEY = "Or" * 24
AZURE_API_VERSION = "2024-02-01"
SYSTEM_PROMPT = "Answer in one sentence."

# (column, type[, size]) per table, as one-api's structs declare them (GORM's names)
TABLES: dict[str, list[tuple[Any, ...]]] = {
    "users": [("id", "pk"), ("username", "vc", 191), ("password", "text"), ("display_name", "vc", 191),
              ("role", "int"), ("status", "int"), ("email", "vc", 191), ("github_id", "vc", 191),
              ("wechat_id", "vc", 191), ("lark_id", "vc", 191), ("oidc_id", "vc", 191),
              ("access_token", "char", 32), ("quota", "int"), ("used_quota", "int"), ("request_count", "int"),
              ("group", "vc", 32), ("aff_code", "vc", 32), ("inviter_id", "int")],
    "tokens": [("id", "pk"), ("user_id", "int"), ("key", "char", 48), ("status", "int"), ("name", "vc", 191),
               ("created_time", "int"), ("accessed_time", "int"), ("expired_time", "int"), ("remain_quota", "int"),
               ("unlimited_quota", "bool"), ("used_quota", "int"), ("models", "text"), ("subnet", "text")],
    "channels": [("id", "pk"), ("type", "int"), ("key", "text"), ("status", "int"), ("name", "vc", 191),
                 ("weight", "int"), ("created_time", "int"), ("test_time", "int"), ("response_time", "int"),
                 ("base_url", "text"), ("other", "text"), ("balance", "float"), ("balance_updated_time", "int"),
                 ("models", "text"), ("group", "vc", 32), ("used_quota", "int"), ("model_mapping", "vc", 1024),
                 ("priority", "int"), ("config", "text"), ("system_prompt", "text")],
    "abilities": [("group", "vc", 32), ("model", "vc", 191), ("channel_id", "int"), ("enabled", "bool"),
                  ("priority", "int")],
    "options": [("key", "vc", 191), ("value", "text")],
    "redemptions": [("id", "pk"), ("user_id", "int"), ("key", "char", 32), ("status", "int"), ("name", "vc", 191),
                    ("quota", "int"), ("created_time", "int"), ("redeemed_time", "int")],
    "logs": [("id", "pk"), ("user_id", "int"), ("created_at", "int"), ("type", "int"), ("content", "text"),
             ("username", "vc", 191), ("token_name", "vc", 191), ("model_name", "vc", 191), ("quota", "int"),
             ("prompt_tokens", "int"), ("completion_tokens", "int"), ("channel_id", "int"),
             ("request_id", "vc", 191), ("elapsed_time", "int"), ("is_stream", "bool"),
             ("system_prompt_reset", "bool")],
}
ONE_API = Schema(TABLES, {"abilities": '("group", model, channel_id)', "options": '("key")'},
                 (("idx_users_username", "users", "username"), ("idx_tokens_key", "tokens", "key"),
                  ("idx_users_access_token", "users", "access_token"), ("idx_redemptions_key", "redemptions", "key")))


def rows(upstream_url: str, upstream_key: str) -> dict[str, list[dict[str, Any]]]:
    hashed = password_hash_of(PASSWORD)
    return {
        "users": [
            {"id": 1, "username": "root", "password": hashed, "display_name": "Root User", "role": 100, "status": 1,
             "access_token": ROOT_ACCESS_TOKEN, "quota": 500_000_000, "group": "default", "aff_code": "Qq1w"},
            {"id": 7, "username": "bob", "password": hashed, "display_name": "Bob", "role": 1, "status": 1,
             "email": "bob@example.com", "lark_id": "ou_123", "quota": 3_000_000, "used_quota": 4321,
             "request_count": 5, "group": "default", "aff_code": "Ee3r", "inviter_id": 1},
        ],
        "tokens": [
            {"id": 3, "user_id": 1, "key": ROOT_KEY, "status": 1, "name": "root-key", "created_time": NOW,
             "expired_time": -1, "remain_quota": 0, "unlimited_quota": True, "models": None, "subnet": ""},
            {"id": 5, "user_id": 7, "key": USER_KEY, "status": 1, "name": "bob-key", "created_time": NOW,
             "expired_time": -1, "remain_quota": 2_000_000, "unlimited_quota": False,
             "models": "gpt-4o-mini", "subnet": "127.0.0.0/8, 10.0.0.0/8"},
        ],
        "channels": [
            {"id": 4, "type": 1, "key": upstream_key, "status": 1, "name": "fake openai", "weight": 0,
             "created_time": NOW, "base_url": upstream_url, "models": "gpt-4o-mini,gpt-4o", "group": "default",
             "priority": 0, "model_mapping": "", "config": "", "system_prompt": SYSTEM_PROMPT},
            # one-api's 35 is Cohere (new-api's 34); its 35 is MiniMax
            {"id": 5, "type": 35, "key": "co-key-0123456789", "status": 1, "name": "cohere", "models": "command-r",
             "group": "default", "base_url": "", "created_time": NOW, "config": "{}"},
            # Groq at one-api's default base URL, which already holds Groq's /openai prefix
            {"id": 6, "type": 29, "key": "gsk_0123456789", "status": 2, "name": "groq", "models": "llama3-8b-8192",
             "group": "default", "base_url": "https://api.groq.com/openai", "created_time": NOW, "priority": 3},
            # Azure's API version in config (one-api 0.6.5+), not in other
            {"id": 8, "type": 3, "key": "azure-key-0123456789", "status": 1, "name": "azure", "models": "gpt-4",
             "group": "default", "base_url": "https://example-resource.openai.azure.com", "other": "",
             "created_time": NOW, "config": f'{{"api_version": "{AZURE_API_VERSION}"}}'},
            {"id": 9, "type": 38, "key": "deepl-key:fx", "status": 1, "name": "deepl", "models": "deepl-en",
             "group": "default", "created_time": NOW},
            {"id": 10, "type": 36, "key": "sk-deepseek-0123456789", "status": 1, "name": "deepseek",
             "models": "deepseek-chat", "group": "default", "base_url": "", "created_time": NOW},
        ],
        "abilities": [
            {"group": "default", "model": "gpt-4o-mini", "channel_id": 4, "enabled": True, "priority": 0},
            {"group": "default", "model": "gpt-4o", "channel_id": 4, "enabled": True, "priority": 0},
            {"group": "default", "model": "command-r", "channel_id": 5, "enabled": True, "priority": 0},
            {"group": "default", "model": "llama3-8b-8192", "channel_id": 6, "enabled": False, "priority": 3},
            {"group": "default", "model": "gpt-4", "channel_id": 8, "enabled": True, "priority": 0},
            {"group": "default", "model": "deepl-en", "channel_id": 9, "enabled": True, "priority": 0},
        ],
        "options": [
            {"key": "QuotaPerUnit", "value": "500000"},
            {"key": "ModelRatio", "value": '{"gpt-4o-mini": 0.075}'},
            {"key": "SomeOneApiOnlyThing", "value": "1"},
        ],
        "redemptions": [
            {"id": 1, "user_id": 1, "key": "c" * 32, "status": 1, "name": "promo", "quota": 500_000,
             "created_time": NOW, "redeemed_time": 0},
            {"id": 2, "user_id": 1, "key": "d" * 32, "status": 3, "name": "used", "quota": 100, "created_time": NOW,
             "redeemed_time": NOW},
        ],
        "logs": [
            {"id": 1, "user_id": 7, "created_at": NOW - 60, "type": 2, "content": "", "username": "bob",
             "token_name": "bob-key", "model_name": "gpt-4o-mini", "quota": 150, "prompt_tokens": 10,
             "completion_tokens": 20, "channel_id": 4, "request_id": "oneapi-req-1", "elapsed_time": 2400,
             "is_stream": True, "system_prompt_reset": False},
            {"id": 2, "user_id": 1, "created_at": NOW - 10, "type": 1, "content": "top-up", "username": "root",
             "quota": 500_000, "request_id": "", "elapsed_time": 0, "is_stream": False},
        ],
    }


def password_hash_of(password: str) -> str:
    """A bcrypt hash as one-api stores it (cost 4: a test fixture)."""
    import bcrypt

    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
