"""The ``faregate`` command: every command has --help, the admin commands work on a
real database and their results reach the API, ``plugins list`` says why a plugin is
missing, ``doctor`` fails on what cannot serve, and the no-key quick tour works."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import httpx
import pytest
from click.testing import CliRunner

from faregate import __version__
from faregate.cli import cli
from faregate.testing.harness import GatewayProcess

PASSWORD = "correct-horse-9"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name in list(os.environ):
        if name.startswith("FAREGATE_") and not name.startswith("FAREGATE_TEST_"):
            monkeypatch.delenv(name)
    for name in ("FAREGATE_CONFIG", "FAREGATE_PORT", "FAREGATE_WORKERS", "FAREGATE_ACCESS_LOG"):
        monkeypatch.setenv(name, "")  # flags given in this process set these: removed again afterwards
        monkeypatch.delenv(name)
    values = {"FAREGATE_DATA_DIR": str(tmp_path / "data"), "FAREGATE_ADMIN_PASSWORD": PASSWORD}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def run(*args: str, code: int = 0) -> click.testing.Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*prefix, name))


def test_version() -> None:
    assert run("--version").output.strip() == f"faregate {__version__}"


@pytest.mark.parametrize("path", list(commands(cli)), ids=" ".join)
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    out = run(*path, "--help").output
    assert out.startswith("Usage: ") and len(out.splitlines()) > 3


def test_required_commands_exist() -> None:
    found = {" ".join(path) for path in commands(cli)}
    assert {"serve", "migrate", "config show", "admin create-root", "admin reset-password", "admin create-key",
            "plugins list", "doctor", "dev fake-provider", "import new-api"} <= found


def test_config_show_masks_secrets(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAREGATE_SESSION_SECRET", "session-secret-value")
    monkeypatch.setenv("REDIS_CONN_STRING", "redis://127.0.0.1:6379/3")
    out = run("config", "show").output
    assert "session-secret-value" not in out
    assert re.search(r"^session_secret\s+\*+\s+\(env FAREGATE_SESSION_SECRET\)$", out, re.M)
    assert re.search(r"^redis_url\s+redis://127.0.0.1:6379/3\s+\(env REDIS_CONN_STRING\)$", out, re.M)
    doc = json.loads(run("config", "show", "--json").output)
    assert doc["session_secret"]["value"] == "********" and doc["port"]["env"] == "FAREGATE_PORT"


def test_config_file_flag(env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "faregate.toml"
    config.write_text("port = 4123\n")
    doc = json.loads(run("--config", str(config), "config", "show", "--json").output)
    assert doc["port"] == {"value": 4123, "origin": f"config file {config}", "env": "FAREGATE_PORT"}
    assert doc["config"]["origin"] == "command line --config"  # not the variable the flag is passed on in
    text = run("--config", str(config), "config", "show").output
    assert re.search(r"^config\s+\S+faregate\.toml\s+\(command line --config\)$", text, re.M)


def test_flags_are_told_as_the_command_line(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve``'s flags reach its workers as FAREGATE_<NAME> variables, yet their origin
    (and a refusal) names the flag; a variable changed since is the environment's again."""
    from faregate.cli.runtime import export_flags
    from faregate.settings import CORE_SETTINGS, SettingError, Settings

    export_flags({"port": 4124, "access_log": False, "host": None})
    settings = Settings(CORE_SETTINGS)
    assert settings.port == 4124 and settings.origin("port") == "command line --port"
    assert settings.origin("access_log") == "command line --no-access-log" and settings.origin("host") == "default"
    monkeypatch.setenv("FAREGATE_PORT", "4125")
    assert Settings(CORE_SETTINGS).origin("port") == "env FAREGATE_PORT"
    export_flags({"workers": "many"})
    with pytest.raises(SettingError, match=r"^--workers='many' is not valid"):
        Settings(CORE_SETTINGS)


def test_a_bad_setting_is_one_line(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAREGATE_LOG_LEVEL", "loud")
    proc = subprocess.run([sys.executable, "-m", "faregate.cli", "config", "show"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("faregate: FAREGATE_LOG_LEVEL='loud' is not valid")


def test_a_bad_setting_is_a_json_line_in_json_mode(env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """FAREGATE_LOG_FORMAT=json: every line the process writes is JSON, this one too,
    whether JSON was asked for in the environment or in the config file."""
    monkeypatch.setenv("FAREGATE_LOG_LEVEL", "loud")
    config = tmp_path / "json.toml"
    config.write_text('log_format = "json"\nport = 4000\n')
    for args, log_format in ((["config", "show"], "json"), (["--config", str(config), "config", "show"], None)):
        if log_format:
            monkeypatch.setenv("FAREGATE_LOG_FORMAT", log_format)
        else:
            monkeypatch.delenv("FAREGATE_LOG_FORMAT")
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2 and result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        record = json.loads(lines[0])
        assert record["level"] == "ERROR" and record["logger"] == "faregate" and record["event"] == "setting_error"
        assert record["message"].startswith("FAREGATE_LOG_LEVEL='loud' is not valid")
    monkeypatch.setenv("FAREGATE_LOG_FORMAT", "jsn")  # the format itself is wrong: said in text
    wrong = CliRunner().invoke(cli, ["config", "show"])
    assert wrong.exit_code == 2 and wrong.stderr.startswith("faregate: FAREGATE_")


async def test_admin_commands_reach_the_api(env: dict[str, str], tmp_path: Path) -> None:
    # a console's first steps without the console: root, a key, a new password
    await asyncio.to_thread(run, "migrate")
    out = (await asyncio.to_thread(run, "admin", "create-root", "--username", "boss")).output
    assert "root user 'boss' created" in out
    again = await asyncio.to_thread(CliRunner().invoke, cli, ["admin", "create-root"])
    assert again.exit_code == 1 and "already initialised" in again.output
    key = (await asyncio.to_thread(run, "admin", "create-key", "--user", "boss", "--name", "ci", "--quota", "5000"))
    sk = key.stdout.strip()
    assert re.fullmatch(r"sk-[A-Za-z0-9]{48}", sk)
    missing = await asyncio.to_thread(CliRunner().invoke, cli, ["admin", "create-key", "--user", "nobody"])
    assert missing.exit_code == 1 and "no user named 'nobody'" in missing.output
    proc = GatewayProcess(env["FAREGATE_DATA_DIR"])
    await asyncio.to_thread(proc.start)
    try:
        async with httpx.AsyncClient(base_url=proc.base_url) as client:
            login = await client.post("/api/user/login", json={"username": "boss", "password": PASSWORD})
            assert login.json()["success"] is True
            models = await client.get("/v1/models", headers={"Authorization": f"Bearer {sk}"})
            assert models.status_code == 200
            os.environ["FAREGATE_ADMIN_PASSWORD"] = "a-new-password-1"
            await asyncio.to_thread(run, "admin", "reset-password", "boss")
            old = await client.post("/api/user/login", json={"username": "boss", "password": PASSWORD})
            assert old.json()["success"] is False
            new = await client.post("/api/user/login", json={"username": "boss", "password": "a-new-password-1"})
            assert new.json()["success"] is True
    finally:
        await asyncio.to_thread(proc.stop)


def test_create_key_keeps_the_per_user_key_cap(env: dict[str, str]) -> None:
    # token_setting.max_user_tokens binds the CLI as it binds POST /api/token/
    import sqlite3

    run("migrate")
    run("admin", "create-root", "--username", "boss")
    with contextlib.closing(sqlite3.connect(Path(env["FAREGATE_DATA_DIR"]) / "faregate.db")) as db, db:
        db.execute("INSERT INTO options (key, value) VALUES ('token_setting.max_user_tokens', '1')")
    run("admin", "create-key", "--user", "boss")
    refused = CliRunner().invoke(cli, ["admin", "create-key", "--user", "boss"])
    assert refused.exit_code == 1
    assert refused.stderr.strip().splitlines() == ["Error: 已达到最大令牌数量限制 (1)"]
    assert refused.stdout == ""


def test_admin_refuses_a_short_password(env: dict[str, str]) -> None:
    result = CliRunner().invoke(cli, ["admin", "create-root", "--password", "short"])
    assert result.exit_code == 2 and "password must be 8 to 64 characters" in result.output


def test_plugins_list_says_why(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from faregate import plugins as plugin_module

    real = plugin_module.installed_entry_points

    def with_a_broken_one() -> list[tuple[importlib.metadata.EntryPoint, str, str]]:
        broken = importlib.metadata.EntryPoint("faregate-broken", "faregate_no_such_module", "faregate")
        return [*real(), (broken, "faregate-broken", "9.9")]

    monkeypatch.setattr(plugin_module, "installed_entry_points", with_a_broken_one)
    monkeypatch.setenv("FAREGATE_DISABLED_PLUGINS", "faregate-adapter-anthropic,pricing")
    rows = {row["name"]: row for row in json.loads(run("plugins", "list", "--json").output)}
    assert rows["faregate-adapter-openai"]["state"] == "enabled"
    assert "register_providers" in rows["faregate-adapter-openai"]["hooks"]
    assert rows["faregate-adapter-anthropic"]["state"] == "disabled"
    assert rows["faregate-adapter-anthropic"]["reason"] == "blocked by FAREGATE_DISABLED_PLUGINS"
    assert rows["faregate.default_plugins.pricing"]["state"] == "disabled"  # a core default, by its short name
    assert rows["faregate.default_plugins.pricing"]["reason"] == "blocked by FAREGATE_DISABLED_PLUGINS"
    assert rows["faregate-broken"]["state"] == "broken"
    assert "ModuleNotFoundError" in rows["faregate-broken"]["reason"]
    text = run("plugins", "list").output
    assert re.search(r"^faregate-broken\s+9\.9\s+broken\s+ModuleNotFoundError", text, re.M)
    monkeypatch.setenv("FAREGATE_PLUGINS", "faregate-adapter-openai,faregate-adapter-anthropic")
    rows = {row["name"]: row for row in json.loads(run("plugins", "list", "--json").output)}
    assert rows["faregate-adapter-gemini"]["reason"] == "not in the allow list FAREGATE_PLUGINS"
    assert rows["faregate-adapter-anthropic"]["reason"] == "blocked by FAREGATE_DISABLED_PLUGINS"  # both: the block
    assert rows["faregate-adapter-openai"]["state"] == "enabled"


def test_doctor_fails_on_a_broken_plugin(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from faregate import plugins as plugin_module

    real = plugin_module.installed_entry_points
    broken = importlib.metadata.EntryPoint("faregate-broken", "faregate_no_such_module", "faregate")
    monkeypatch.setattr(plugin_module, "installed_entry_points", lambda: [*real(), (broken, "faregate-broken", "9.9")])
    run("migrate")
    result = CliRunner().invoke(cli, ["doctor"])
    assert result.exit_code == 1, result.output
    assert re.search(r"^FAIL  plugin faregate-broken: ModuleNotFoundError: No module named 'faregate_no_such_module'$",
                     result.output, re.M), result.output
    assert "ok  plugins:" not in result.output and "ok  database: sqlite answers" in result.output


def test_doctor(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    pending = CliRunner().invoke(cli, ["doctor"])
    assert pending.exit_code == 1 and "FAIL  migrations:" in pending.output
    run("migrate")
    healthy = run("doctor").output
    assert "ok  database: sqlite answers" in healthy and "ok  migrations: all applied" in healthy
    monkeypatch.setenv("FAREGATE_REDIS_URL", "redis://127.0.0.1:1/0")
    no_redis = CliRunner().invoke(cli, ["doctor"])
    assert no_redis.exit_code == 1 and "FAIL  redis: unreachable" in no_redis.output
    monkeypatch.delenv("FAREGATE_REDIS_URL")
    monkeypatch.setenv("FAREGATE_DB_URL", "mysql://root@127.0.0.1:1/nowhere")
    no_db = CliRunner().invoke(cli, ["doctor"])
    assert no_db.exit_code == 1 and "FAIL  database: mysql unreachable" in no_db.output


def test_fake_provider_lists_choices(env: dict[str, str]) -> None:
    result = CliRunner().invoke(cli, ["dev", "fake-provider"])
    assert result.exit_code == 2 and "openai" in result.output and "anthropic" in result.output


@contextlib.contextmanager
def fake_provider(name: str) -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-m", "faregate.cli", "dev", "fake-provider", name, "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        found = re.search(r"listening on (http://\S+)", first)
        assert found, first
        yield found[1]
    finally:
        proc.terminate()
        proc.wait(10)


async def test_quick_tour_without_a_provider_key(env: dict[str, str]) -> None:
    """The README's tour: a fake upstream from the CLI, a channel on it, the official SDK."""
    import openai

    with fake_provider("openai") as upstream:
        await asyncio.to_thread(run, "migrate")
        await asyncio.to_thread(run, "admin", "create-root")
        sk = (await asyncio.to_thread(run, "admin", "create-key", "--user", "root")).stdout.strip()
        proc = GatewayProcess(env["FAREGATE_DATA_DIR"])
        await asyncio.to_thread(proc.start)
        try:
            async with httpx.AsyncClient(base_url=proc.base_url) as admin:
                await admin.post("/api/user/login", json={"username": "root", "password": PASSWORD})
                added = await admin.post("/api/channel/", headers={"New-Api-User": "1"}, json={
                    "mode": "single", "channel": {"type": 1, "name": "fake", "key": "sk-fake-upstream",
                                                  "base_url": upstream, "models": "gpt-4o-mini", "group": "default"}})
                assert added.json()["success"] is True, added.text
            client = openai.AsyncOpenAI(base_url=proc.base_url + "/v1", api_key=sk, max_retries=0)
            reply = await client.chat.completions.create(model="gpt-4o-mini",
                                                         messages=[{"role": "user", "content": "hi"}])
            assert reply.choices[0].message.content and reply.usage is not None
        finally:
            await asyncio.to_thread(proc.stop)
