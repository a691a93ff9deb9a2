"""A new-api database is input like any other: `faregate import new-api` stores no row the
API would refuse (a channel aimed at cloud metadata, a header override smuggling a line
break, a key that is not a key, values past a column's bounds), and its report, printed
to a terminal or a CI log, never holds a key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from faregate.db import models as m
from faregate.importing.run import import_newapi
from faregate.importing.source import open_source
from faregate.testing.newapi_db import rows, sqlite_source

HOSTILE_KEY = "sk-not'; DROP TABLE users;--"


def hostile() -> dict[str, list[dict[str, Any]]]:
    data = rows("https://api.openai.com", "sk-upstream-secret-value")
    data["channels"] += [
        {"id": 20, "type": 1, "key": "sk-a", "status": 1, "name": "imds", "models": "m", "group": "default",
         "base_url": "http://[::ffff:169.254.169.254]/"},
        {"id": 21, "type": 1, "key": "sk-b", "status": 1, "name": "crlf", "models": "m", "group": "default",
         "header_override": '{"X-Evil": "a\\r\\nSet-Cookie: session=stolen"}'},
        {"id": 22, "type": 1, "key": "sk-c", "status": 1, "name": "x" * 129, "models": "m", "group": "default"},
        {"id": 23, "type": 1, "key": "sk-d", "status": 1, "name": "mapping", "models": "m", "group": "default",
         "model_mapping": "[1, 2]"},
    ]
    data["tokens"] += [
        {"id": 30, "user_id": 7, "key": HOSTILE_KEY, "status": 1, "name": "bad", "expired_time": -1,
         "remain_quota": 1, "unlimited_quota": False, "model_limits_enabled": False, "cross_group_retry": False},
        {"id": 31, "user_id": 7, "key": "K" * 48, "status": 1, "name": "huge", "expired_time": -1,
         "remain_quota": str(2**64), "unlimited_quota": False, "model_limits_enabled": False,
         "cross_group_retry": False},
    ]
    data["users"].append({"id": 40, "username": "mallory", "password": "x", "role": 1000, "status": 1})
    return data


async def test_hostile_rows_are_refused_and_keys_never_reported(tmp_path: Path, make_gateway: Any) -> None:
    source_url = sqlite_source(tmp_path / "one-api.db", hostile())
    server = await make_gateway()
    async with open_source(source_url, server.gateway.storage_backends) as source:
        report = await import_newapi(server.gateway, source, dry_run=False)
    refused = {t.table: t.refused for t in report.tables}
    assert refused["channels"] >= 6 and refused["tokens"] == 2 and refused["users"] == 2
    assert set(await m.Channel.all().values_list("id", flat=True)) == {4, 6}
    assert set(await m.Token.all().values_list("id", flat=True)) == {3, 5}
    assert not await m.User.filter(id=40).exists()  # role 1000 is no role
    assert await m.User.all().count() == 2  # the users table survived the key above
    text = json.dumps(report.as_dict()) + "\n".join(report.lines())
    for secret in ("sk-upstream-secret-value", HOSTILE_KEY, "K" * 48, "sk-a", "Zx" * 24):
        assert secret not in text
