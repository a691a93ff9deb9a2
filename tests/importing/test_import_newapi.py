"""``faregate import new-api``: a database made from new-api's schema (conftest.py) comes
across with its ids, passwords, keys, channels and history; refused rows are named; a
second run changes nothing; SQLite, MariaDB and PostgreSQL sources, a PostgreSQL target."""

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
from faregate.importing.run import import_newapi
from faregate.importing.source import SourceError, open_source, source_url, sqlite_path
from faregate.security.crypto import key_hash
from faregate.security.passwords import verify_password
from faregate.testing.newapi_db import (
    NEWAPI_PARAM_OVERRIDE,
    PASSWORD,
    ROOT_ACCESS_TOKEN,
    ROOT_KEY,
    USER_KEY,
    mariadb_source,
    postgres_database,
    postgres_source,
    rows,
    sqlite_source,
)

# what the fixture's rows become: (imported, present, refused) per table
EXPECTED = {
    "options": (2, 0, 1),  # RetryTimes "not a number" refused; SomeNewApiOnlyThing noted, not counted
    "users": (2, 0, 1),  # "gone" is soft-deleted (left out), the 80-character name refused
    "tokens": (2, 0, 0),
    "channels": (2, 0, 2),  # type 9999 served by no plugin; a cloud-metadata base URL
    "abilities": (5, 1, 0),  # channel 11's row: its channel was refused
    "redemptions": (2, 0, 0),
    "top_ups": (1, 0, 0),
    "logs": (3, 0, 0),
}


def counts(report: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    return {t["table"]: (t["imported"], t["present"], t["refused"]) for t in report["tables"]}


def run_cli(data_dir: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["import", "new-api", *args, "--json"],
                                env={"FAREGATE_DATA_DIR": str(data_dir)}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output[result.output.index("{"):])
    return report


async def read_target(data_dir: Path) -> dict[str, Any]:
    from faregate.cli.runtime import load_gateway

    gateway = load_gateway()
    await storage.open_storage(gateway.db_config)
    try:
        channel = await m.Channel.get(id=6)
        return {
            "channel_4": await m.Channel.get(id=4),
            "users": {u.id: u for u in await m.User.all()},
            "token": await m.Token.get(id=5),
            "channel_key": gateway.box.decrypt(channel.key_enc, "channel:6"),
            "channel": channel,
            "abilities": sorted((a.channel_id, a.group, a.model, a.enabled)
                                for a in await m.Ability.all()),
            "options": {o.key: o.value for o in await m.Option.all()},
            "logs": {log.id: log for log in await m.Log.all()},
            "top_up": await m.TopUp.get(id=1),
            "redemptions": await m.Redemption.all().count(),
            "setup": await m.Setup.exists(),
        }
    finally:
        await storage.close_storage()


def test_dry_run_import_and_a_second_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = sqlite_source(tmp_path / "one-api.db", rows("https://api.openai.com", "sk-upstream"))
    data_dir = tmp_path / "faregate"
    monkeypatch.setenv("FAREGATE_DATA_DIR", str(data_dir))

    dry = run_cli(data_dir, "--from", source, "--dry-run")
    assert dry["dry_run"] is True
    assert counts(dry) == EXPECTED
    assert not (data_dir / "faregate.db").exists() or not asyncio.run(_has_users())  # nothing written

    first = run_cli(data_dir, "--from", source)
    assert counts(first) == EXPECTED
    tables = {t["table"]: t for t in first["tables"]}
    assert any("9999" in r for r in tables["channels"]["refusals"])
    assert any("169.254.169.254" in r or "metadata" in r for r in tables["channels"]["refusals"])
    assert any("username" in r for r in tables["users"]["refusals"])
    assert any("RetryTimes" in r for r in tables["options"]["refusals"])
    assert any("SomeNewApiOnlyThing" in n for n in tables["options"]["notes"])
    assert any("request_id" in n for n in tables["logs"]["notes"])

    target = asyncio.run(read_target(data_dir))
    root, alice = target["users"][1], target["users"][7]
    assert set(target["users"]) == {1, 7}
    assert alice.password_hash.startswith("$2") and verify_password(alice.password_hash, PASSWORD)
    assert (alice.quota, alice.used_quota, alice.group, alice.inviter_id) == (2_500_000, 1234, "vip", 1)
    assert root.role == m.ROLE_ROOT and root.access_token == key_hash(ROOT_ACCESS_TOKEN)
    token = target["token"]
    assert (token.user_id, token.key_hash, token.remain_quota, token.model_limits_enabled) == (
        7, key_hash(USER_KEY), 2_000_000, True)
    assert target["channel_key"] == "sk-upstream\nsk-second"
    assert json.loads(target["channel"].channel_info)["multi_key_mode"] == "polling"
    assert target["channel"].param_override == NEWAPI_PARAM_OVERRIDE  # sync_fields, token maps: imported as they are
    # new-api's second settings column comes as it is, beside setting (its console reads each); one
    # that is not a JSON object does not, and the report names its channel and why
    assert (target["channel_4"].settings, target["channel_4"].setting) == ('{"azure_responses_version": ""}', "")
    assert target["channel"].settings == ""
    assert any("channel 6: not valid JSON" in n for n in tables["channels"]["notes"]), tables["channels"]["notes"]
    assert (6, "default", "gpt-4o", False) in target["abilities"]  # the source's own state, kept
    assert len(target["abilities"]) == 5
    assert target["options"]["ModelRatio"] == '{"gpt-4o-mini": 0.075}' and "RetryTimes" not in target["options"]
    assert target["logs"][1].request_id == "req-1" and target["logs"][2].request_id is None
    assert target["logs"][3].request_id is None and target["logs"][2].is_stream is True
    assert str(target["top_up"].money) == "72.500000" and target["top_up"].status == "success"
    assert target["redemptions"] == 2 and target["setup"] is True

    again = run_cli(data_dir, "--from", source)
    assert {t: c[0] for t, c in counts(again).items()} == dict.fromkeys(EXPECTED, 0)
    assert counts(again)["users"][1] == 2 and counts(again)["logs"][1] == 3


async def _has_users() -> bool:
    from faregate.cli.runtime import load_gateway

    gateway = load_gateway()
    await storage.open_storage(gateway.db_config)
    try:
        return await m.User.exists()
    except Exception:  # noqa: BLE001 - no tables: nothing was written
        return False
    finally:
        await storage.close_storage()


async def test_imported_keys_passwords_and_access_tokens_work(tmp_path: Path, fake_openai: Any,
                                                            make_gateway: Any) -> None:
    """After the import (the real command, in its own process) a new-api client keeps its
    ``sk-`` key, a user their password (upgraded to argon2id at login), a script its
    access token."""
    source = sqlite_source(tmp_path / "one-api.db", rows(fake_openai.base_url, "sk-upstream"))
    data_dir = tmp_path / "faregate"
    env = {**os.environ, "FAREGATE_DATA_DIR": str(data_dir)}
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "faregate.cli", "import", "new-api",
                                                    "--from", source], env=env, capture_output=True, text=True,
                                   timeout=120)
    assert done.returncode == 0, done.stderr
    assert "users" in done.stdout and "imported" in done.stdout

    server = await make_gateway(data_dir=str(data_dir))
    client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-" + USER_KEY, max_retries=0)
    try:
        answer = await client.chat.completions.create(model="gpt-4o-mini",
                                                      messages=[{"role": "user", "content": "hi"}])
        assert answer.choices[0].message.content
    finally:
        await client.close()
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        login = (await http.post("/api/user/login", json={"username": "alice", "password": PASSWORD})).json()
        assert login["success"] and login["data"]["id"] == 7
        wrong = (await http.post("/api/user/login", json={"username": "root", "password": "nope-nope"})).json()
        assert not wrong["success"]
    async with httpx.AsyncClient(base_url=server.base_url) as script:  # no session cookie
        me = (await script.get("/api/user/self", headers={"Authorization": ROOT_ACCESS_TOKEN,
                                                        "New-Api-User": "1"})).json()
        assert me["success"] and me["data"]["username"] == "root", me
    alice = await m.User.get(id=7)
    assert alice.password_hash.startswith("$argon2id$") and verify_password(alice.password_hash, PASSWORD)
    assert (await m.User.get(id=1)).password_hash.startswith("$2")  # not logged in yet: untouched
    # the root key works too, and a key never issued in new-api does not
    root = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-" + ROOT_KEY, max_retries=0)
    stranger = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="sk-" + "Q" * 48, max_retries=0)
    try:
        assert (await root.models.list()).data
        with pytest.raises(openai.AuthenticationError):
            await stranger.models.list()
    finally:
        await root.close()
        await stranger.close()


@pytest.mark.mariadb
async def test_import_from_mariadb(mariadb_url: str, make_gateway: Any) -> None:
    await mariadb_source(mariadb_url, rows("https://api.openai.com", "sk-upstream"))
    server = await make_gateway()
    gateway = server.gateway
    async with open_source(mariadb_url, gateway.storage_backends) as source:
        report = (await import_newapi(gateway, source, dry_run=False)).as_dict()
    assert counts(report) == EXPECTED
    assert (await m.Token.get(id=5)).key_hash == key_hash(USER_KEY)
    assert (await m.Log.get(id=2)).is_stream is True


@pytest.mark.postgres
async def test_import_from_postgres_into_postgres(make_gateway: Any) -> None:
    """A PostgreSQL target's id sequences are moved past the imported ids: the next row
    made here does not collide with one imported."""
    async with postgres_database() as source_url_, postgres_database() as target_url:
        await postgres_source(source_url_, rows("https://api.openai.com", "sk-upstream"))
        server = await make_gateway(db_url=target_url)
        gateway = server.gateway
        async with open_source(source_url_, gateway.storage_backends) as source:
            report = (await import_newapi(gateway, source, dry_run=False)).as_dict()
        assert counts(report) == EXPECTED
        made = await m.User.create(username="made-here")
        assert made.id > 7
        log = await m.Log.create(user_id=7, created_at=0, type=m.LOG_CONSUME)
        assert log.id > 3
        await server.stop()


def test_source_forms() -> None:
    assert source_url("root:pw@tcp(db:3306)/oneapi?parseTime=true") == "mysql://root:pw@db:3306/oneapi"
    assert source_url("/data/one-api.db") == "sqlite:///data/one-api.db"
    assert source_url("sqlite:///data/one-api.db") == "sqlite:///data/one-api.db"
    assert source_url("postgres://u:p@h/db") == "postgres://u:p@h/db"
    assert sqlite_path("sqlite:///data/one-api.db") == "/data/one-api.db"
    assert sqlite_path("postgres://u:p@h/db") is None
    with pytest.raises(SourceError):
        source_url("   ")


def test_bad_sources_fail_in_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"FAREGATE_DATA_DIR": str(tmp_path / "faregate")}
    missing = runner.invoke(cli, ["import", "new-api", "--from", str(tmp_path / "nope.db")], env=env)
    assert missing.exit_code == 1 and "no SQLite database at" in missing.output
    assert "Traceback" not in missing.output
    other = tmp_path / "other.db"
    sqlite_source(other, {})  # new-api's tables, no rows: fine
    empty = runner.invoke(cli, ["import", "new-api", "--from", str(other), "--dry-run"], env=env)
    assert empty.exit_code == 0, empty.output
    import sqlite3

    sqlite3.connect(tmp_path / "notes.db").execute("CREATE TABLE notes (id integer)").connection.commit()
    wrong = runner.invoke(cli, ["import", "new-api", "--from", str(tmp_path / "notes.db")], env=env)
    assert wrong.exit_code == 1 and "not a new-api or one-api database" in wrong.output
