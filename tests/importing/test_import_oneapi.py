"""``faregate import new-api`` from a one-api database (songquanpeng/one-api, new-api's
origin; faregate.testing.oneapi_db): told from new-api's by its tables, its channel types
renumbered (one-api's 35 is Cohere, new-api's MiniMax), its channel config, key limits and
log durations translated; a one-api user's password and key work afterwards, the key still
limited to its models."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from click.testing import CliRunner

from faregate.cli import cli
from faregate.db import models as m
from faregate.db import storage
from faregate.importing import oneapi
from faregate.importing.rows import Rejected
from faregate.security.crypto import key_hash
from faregate.security.passwords import verify_password
from faregate.testing.newapi_db import sqlite_source
from faregate.testing.oneapi_db import (
    AZURE_API_VERSION,
    ONE_API,
    PASSWORD,
    ROOT_KEY,
    SYSTEM_PROMPT,
    USER_KEY,
    rows,
)

# (imported, present, refused) per table: no top_ups table in one-api
EXPECTED = {
    "options": (2, 0, 0),  # SomeOneApiOnlyThing noted, not counted
    "users": (2, 0, 0),
    "tokens": (2, 0, 0),
    "channels": (5, 0, 1),  # DeepL (one-api's 38) has no equivalent
    "abilities": (5, 1, 0),  # the DeepL channel's row: its channel was refused
    "redemptions": (2, 0, 0),
    "logs": (2, 0, 0),
}


def counts(report: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    return {t["table"]: (t["imported"], t["present"], t["refused"]) for t in report["tables"]}


def run_cli(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["import", "new-api", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output[result.output.index("{"):])
    return report


async def read_target() -> dict[str, Any]:
    from faregate.cli.runtime import load_gateway

    gateway = load_gateway()
    await storage.open_storage(gateway.db_config)
    try:
        return {
            "users": {u.id: u for u in await m.User.all()},
            "token": await m.Token.get(id=5),
            "channels": {c.id: c for c in await m.Channel.all()},
            "abilities": sorted((a.channel_id, a.model, a.enabled) for a in await m.Ability.all()),
            "log": await m.Log.get(id=1),
            "redeemed": await m.Redemption.get(id=2),
        }
    finally:
        await storage.close_storage()


def test_a_one_api_database_dry_run_import_and_a_second_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = sqlite_source(tmp_path / "one-api.db", rows("https://api.openai.com", "sk-upstream"), ONE_API)
    monkeypatch.setenv("FAREGATE_DATA_DIR", str(tmp_path / "faregate"))

    dry = run_cli("--from", source, "--dry-run")
    assert dry["schema"] == "one-api" and counts(dry) == EXPECTED
    first = run_cli("--from", source)
    assert first["schema"] == "one-api" and counts(first) == EXPECTED
    tables = {t["table"]: t for t in first["tables"]}
    assert any("38 (DeepL) has no equivalent" in r for r in tables["channels"]["refusals"])
    assert any("SomeOneApiOnlyThing" in n for n in tables["options"]["notes"])
    assert any("one-api's schema" in n for n in first["notes"])

    target = asyncio.run(read_target())
    bob = target["users"][7]
    assert verify_password(bob.password_hash, PASSWORD) and (bob.quota, bob.used_quota) == (3_000_000, 4321)
    token = target["token"]
    assert token.key_hash == key_hash(USER_KEY)
    assert (token.model_limits_enabled, token.model_limits) == (True, "gpt-4o-mini")  # one-api's models
    assert token.allow_ips == "127.0.0.0/8, 10.0.0.0/8"  # one-api's subnet
    channels = target["channels"]
    assert {cid: c.type for cid, c in channels.items()} == {4: 1, 5: 34, 6: 1001, 8: 3, 10: 43}
    assert json.loads(channels[4].setting)["system_prompt"] == SYSTEM_PROMPT
    assert channels[6].base_url == "" and channels[6].status == 2  # Groq's own default, as new-api's type
    assert channels[8].other == AZURE_API_VERSION  # from config
    assert (6, "llama3-8b-8192", False) in target["abilities"]
    assert (10, "deepseek-chat", True) in target["abilities"]  # rebuilt from its channel
    assert target["log"].use_time == 2 and target["log"].is_stream is True  # 2400 ms
    assert target["redeemed"].status == 3

    again = run_cli("--from", source)
    assert {t: c[0] for t, c in counts(again).items()} == dict.fromkeys(EXPECTED, 0)
    assert counts(again)["users"][1] == 2


async def test_a_one_api_users_password_and_key_work(tmp_path: Path, fake_openai: Any, make_gateway: Any) -> None:
    source = sqlite_source(tmp_path / "one-api.db", rows(fake_openai.base_url, "sk-upstream"), ONE_API)
    data_dir = tmp_path / "faregate"
    env = {**os.environ, "FAREGATE_DATA_DIR": str(data_dir)}
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "faregate.cli", "import", "new-api",
                                                    "--from", source], env=env, capture_output=True, text=True,
                                   timeout=120)
    assert done.returncode == 0, done.stderr
    assert "source: a one-api database" in done.stdout

    server = await make_gateway(data_dir=str(data_dir))
    client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-" + USER_KEY, max_retries=0)
    try:
        answer = await client.chat.completions.create(model="gpt-4o-mini",
                                                      messages=[{"role": "user", "content": "hi"}])
        assert answer.choices[0].message.content
        sent = fake_openai.requests[-1]["json"]["messages"]
        assert sent[0] == {"role": "system", "content": SYSTEM_PROMPT}  # the channel's system_prompt column
        with pytest.raises(openai.APIStatusError):  # one-api's key allowed gpt-4o-mini only
            await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    finally:
        await client.close()
    root = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-" + ROOT_KEY, max_retries=0)
    try:
        assert (await root.models.list()).data
    finally:
        await root.close()
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        login = (await http.post("/api/user/login", json={"username": "bob", "password": PASSWORD})).json()
        assert login["success"] and login["data"]["id"] == 7


def test_the_schema_is_told_and_can_be_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert oneapi.detect_schema({"users", "channels", "top_ups"}, {"id"}, {"id"}) == "new-api"
    assert oneapi.detect_schema({"users", "channels"}, {"id", "aff_count"}, {"id"}) == "new-api"
    assert oneapi.detect_schema({"users", "channels"}, {"id", "lark_id"}, {"id", "config"}) == "one-api"
    source = sqlite_source(tmp_path / "one-api.db", rows("https://api.openai.com", "sk-upstream"), ONE_API)
    monkeypatch.setenv("FAREGATE_DATA_DIR", str(tmp_path / "faregate"))
    # the operator's choice wins: read as new-api's, one-api's Cohere (35) passes as MiniMax and its
    # DeepL (38) as Jina, while Groq (29) and DeepSeek (36) are types nothing serves
    forced = run_cli("--from", source, "--dry-run", "--schema", "new-api")
    assert forced["schema"] == "new-api" and counts(forced)["channels"] == (4, 0, 2)


def test_one_api_channel_rows() -> None:
    vertex = oneapi.channel({"id": 1, "type": 42, "key": 'us-east5|proj-1|{"type": "service_account"}',
                             "config": ""})
    assert (vertex["type"], vertex["key"], vertex["other"]) == (41, '{"type": "service_account"}', "us-east5")
    assert json.loads(vertex["setting"]) == {"vertex_project": "proj-1"}
    aws = oneapi.channel({"id": 2, "type": 33, "key": "",
                          "config": '{"ak": "AKIA0123", "sk": "secret0123", "region": "us-east-1"}'})
    assert aws["key"] == "AKIA0123|secret0123|us-east-1"
    assert oneapi.channel({"id": 3, "type": 2, "base_url": ""})["base_url"] == "https://oa.api2d.net"
    assert oneapi.channel({"id": 4, "type": 29, "base_url": "https://groq.proxy.example"})["type"] == 1
    assert oneapi.channel({"id": 5, "type": 37, "config": '{"user_id": "acct"}'})["other"] == "acct"
    for kind in (0, 38, 41, 43, 52):
        with pytest.raises(Rejected, match=f"type {kind} "):
            oneapi.channel({"id": 6, "type": kind})
    with pytest.raises(Rejected, match="config"):
        oneapi.channel({"id": 7, "type": 3, "config": "{not json"})


def test_a_source_it_cannot_open_is_named_without_its_password(tmp_path: Path) -> None:
    pytest.importorskip("faregate_storage_mysql")
    result = CliRunner().invoke(cli, ["import", "new-api", "--from", "mysql://root:src-pass-9876@127.0.0.1:1/x"],
                                env={"FAREGATE_DATA_DIR": str(tmp_path / "faregate")})
    assert result.exit_code == 1 and "src-pass-9876" not in result.output
    assert "cannot open the source: " in result.output and "(cause: ConnectionRefusedError" in result.output


@pytest.mark.mariadb
async def test_a_one_api_database_on_mariadb_is_told_by_its_columns(mariadb_url: str, make_gateway: Any) -> None:
    from faregate.importing.run import import_newapi
    from faregate.importing.source import open_source
    from faregate.testing.newapi_db import mariadb_source

    await mariadb_source(mariadb_url, rows("https://api.openai.com", "sk-upstream"), ONE_API)
    server = await make_gateway()
    async with open_source(mariadb_url, server.gateway.storage_backends) as source:
        assert "lark_id" in await source.columns("users") and await source.columns("nothing") == set()
        report = (await import_newapi(server.gateway, source, dry_run=True)).as_dict()
    assert report["schema"] == "one-api" and counts(report) == EXPECTED
