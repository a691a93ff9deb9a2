"""What a CLI command imports: ``--version`` and ``--help`` start with click alone (no
pydantic, pluggy, asyncio or the gateway's libraries), ``config show`` resolves the
settings without building a gateway, and a bad setting stops a command before the
gateway is imported. Every command pays for its imports at each start
(docs/benchmarks.md, "CLI start-up")."""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

#: modules no command needs before it runs (pydantic: the settings; the rest: a gateway)
HEAVY = ("pydantic", "pydantic_settings", "pluggy", "asyncio", "tortoise", "quart", "httpx", "aiohttp",
         "faregate.api", "faregate.gateway", "faregate.plugins")

PROBE = """
import json, sys
from faregate.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def imported(tmp_path: Path, *args: str, **variables: str) -> set[str]:
    """The modules imported by the time ``faregate ARGS`` ends (its output's last line)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAREGATE_")}
    env.update(FAREGATE_DATA_DIR=str(tmp_path / "data"), **variables)
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env,
                          timeout=120, check=True)
    return set(json.loads(proc.stdout.splitlines()[-1]))


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("config", "--help"), ("admin", "--help")],
                         ids=" ".join)
def test_help_and_version_import_no_heavy_module(tmp_path: Path, args: tuple[str, ...]) -> None:
    modules = imported(tmp_path, *args)
    assert "click" in modules
    assert [name for name in HEAVY if name in modules] == []


#: what loading the plugins for their settings must not import: the gateway's libraries, the relay,
#: the plugins' routes, providers and their own libraries (about 2 s of CPU with every plugin)
RELAY = ("quart", "tortoise", "httpx", "aiohttp", "cryptography", "faregate.exchange", "faregate.canonical",
         "faregate.contracts", "faregate.db.models", "faregate.management", "opentelemetry", "webauthn",
         "aiosmtplib", "tiktoken")


def relay_modules(modules: set[str], *needed: str) -> list[str]:
    """The modules of :data:`RELAY` (and their submodules) among ``modules``, but the ``needed`` ones."""
    unwanted = tuple(name for name in RELAY if name not in needed)
    return sorted(name for name in modules if name.startswith(unwanted))


def test_config_show_loads_every_plugin_and_none_of_their_relay(tmp_path: Path) -> None:
    """Every plugin's entry module imports what its hooks register inside the hooks, its settings
    come from modules that import no more than ``Setting`` and ``OptionSpec``, and ``faregate.api``
    imports each name on first use: loading the installed plugins costs milliseconds."""
    from faregate.plugins import installed_entry_points

    modules = imported(tmp_path, "config", "show")
    entry_modules = {ep.value.split(":")[0] for ep, _, _ in installed_entry_points()}
    assert len(entry_modules) > 10 and entry_modules <= modules  # every plugin of this repository was loaded
    assert "faregate_adapter_openai.settings" in modules  # and asked for its settings
    assert relay_modules(modules) == []


def test_config_show_builds_no_gateway(tmp_path: Path) -> None:
    modules = imported(tmp_path, "config", "show")
    assert "faregate.plugins" in modules and "faregate.settings.resolve" in modules  # it did resolve them
    assert "faregate.gateway" not in modules
    assert not (tmp_path / "data" / "crypto.secret").exists()  # nor made the gateway's secrets


@pytest.mark.parametrize("variable,value", [("FAREGATE_MAX_BODY_MB", "lots"), ("FAREGATE_PLUGINS", "no-such-plugin")])
def test_a_bad_setting_stops_a_command_before_the_gateway_is_imported(tmp_path: Path, variable: str,
                                                                      value: str) -> None:
    """The operator's typo is told in a fraction of the time the gateway's imports take."""
    modules = imported(tmp_path, "migrate", **{variable: value})
    assert "faregate.settings.resolve" in modules and "faregate.gateway" not in modules


class _Dist:
    """A distribution as importlib.metadata gives it; reading its metadata parses a whole file."""

    def __init__(self, name: str, entry_points: list[importlib.metadata.EntryPoint]) -> None:
        self._name, self.entry_points, self.version = name, entry_points, "1.0"

    @property
    def metadata(self) -> dict[str, str]:
        if not any(ep.group == "faregate" for ep in self.entry_points):
            raise AssertionError(f"the metadata of {self._name}, which has no plugin, was read")
        return {"Name": self._name}


def test_finding_plugins_reads_only_the_plugins_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every gateway (every command, most tests) looks for plugins, three times: parsing the
    metadata of each of the environment's ~200 distributions cost about 45 ms a look."""
    from faregate import plugins

    ours = importlib.metadata.EntryPoint("faregate-x", "faregate_x", "faregate")
    other = importlib.metadata.EntryPoint("x", "x:main", "console_scripts")
    dists = [_Dist("faregate-x", [ours, other]), _Dist("not-a-plugin", [other]), _Dist("bare", [])]
    monkeypatch.setattr(plugins.importlib.metadata, "distributions", lambda: dists)
    plugins._scan_entry_points.cache_clear()
    try:
        assert list(plugins.installed_entry_points()) == [(ours, "faregate-x", "1.0")]
    finally:
        plugins._scan_entry_points.cache_clear()


def test_plugins_are_looked_for_again_after_an_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The scan is kept between looks (a test process builds hundreds of gateways) until a
    directory on sys.path changes, as an install or uninstall changes site-packages."""
    from faregate import plugins

    scans = []
    ours = importlib.metadata.EntryPoint("faregate-x", "faregate_x", "faregate")

    def distributions() -> list[_Dist]:
        scans.append(1)
        return [_Dist("faregate-x", [ours])]

    monkeypatch.setattr(plugins.importlib.metadata, "distributions", distributions)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins._scan_entry_points.cache_clear()
    try:
        for _ in range(3):
            assert list(plugins.installed_entry_points()) == [(ours, "faregate-x", "1.0")]
        assert len(scans) == 1
        (tmp_path / "faregate_y-1.0.dist-info").mkdir()  # what an install adds
        os.utime(tmp_path, ns=(0, 1))  # a later mtime even on a coarse clock: any change counts
        list(plugins.installed_entry_points())
        assert len(scans) == 2
    finally:
        plugins._scan_entry_points.cache_clear()


def test_a_port_in_use_stops_serve_before_the_plugins_load(tmp_path: Path) -> None:
    """``serve`` binds its port right after reading the core settings: a port another program
    holds is told before seconds of plugin and gateway imports."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        modules = imported(tmp_path, "serve", "--port", str(taken.getsockname()[1]))
    assert "faregate.settings.resolve" in modules
    assert "faregate.plugins" not in modules and "faregate.gateway" not in modules


def test_doctor_reaches_the_database_without_the_relay(tmp_path: Path) -> None:
    """``doctor`` needs the plugins' settings, storage engines and tables to check the database,
    not a gateway: with no enabled channel (whose types only the providers know) it builds none."""
    modules = imported(tmp_path, "doctor")
    assert "tortoise" in modules and "faregate.db.storage" in modules  # it did open the database
    assert "faregate_auth_totp.models" in modules  # with the plugins' tables
    assert "faregate.gateway" not in modules
    assert relay_modules(modules, "tortoise", "faregate.db.models") == []
