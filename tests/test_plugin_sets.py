"""Running the gateway (``faregate serve``) with a chosen plugin set from the
environment, and surviving a plugin that cannot be imported."""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator

import httpx
import pytest

from faregate.testing.harness import GatewayProcess


@contextlib.contextmanager
def _login(base_url: str) -> Iterator[httpx.Client]:
    client = httpx.Client(base_url=base_url, timeout=30)
    password = "plugin-sets-pw"
    client.post("/api/setup", json={"username": "root", "password": password, "confirmPassword": password})
    user = client.post("/api/user/login", json={"username": "root", "password": "plugin-sets-pw"}).json()["data"]
    client.headers["New-Api-User"] = str(user["id"])
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def broken_plugin_path(tmp_path):
    """A distribution on sys.path whose entry point raises on import."""
    site = tmp_path / "site"
    (site / "faregate_broken_example-0.1.dist-info").mkdir(parents=True)
    (site / "faregate_broken_example-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: faregate-broken-example\nVersion: 0.1\n")
    (site / "faregate_broken_example-0.1.dist-info" / "entry_points.txt").write_text(
        "[faregate]\nfaregate-broken-example = faregate_broken_example\n")
    (site / "faregate_broken_example.py").write_text(textwrap.dedent("""
        raise RuntimeError("this plugin is broken on purpose")
    """))
    return str(site)


def test_blocking_the_openai_adapter_removes_its_routes(tmp_path):
    proc = GatewayProcess(str(tmp_path / "data"), env={"FAREGATE_DISABLED_PLUGINS": "faregate-adapter-openai"})
    proc.start()
    try:
        with _login(proc.base_url) as client:
            resp = client.post("/v1/chat/completions", json={"model": "m", "messages": []})
            assert resp.status_code == 404 and resp.json()["error"]["type"] == "invalid_request_error"
            assert "openai.chat" not in client.get("/api/status").json()["data"]["formats"]
            names = [p["name"] for p in client.get("/api/plugins").json()["data"]]
            assert "faregate-adapter-openai" not in names
    finally:
        proc.stop()


def test_allow_list_and_broken_plugin_is_reported_not_fatal(tmp_path, broken_plugin_path):
    import os

    env = {"PYTHONPATH": broken_plugin_path + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = GatewayProcess(str(tmp_path / "data"), env=env)
    proc.start()
    try:
        with _login(proc.base_url) as client:
            plugins = {p["name"]: p for p in client.get("/api/plugins").json()["data"]}
            assert "this plugin is broken on purpose" in plugins["faregate-broken-example"]["error"]
            assert plugins["faregate-adapter-openai"]["error"] is None
            assert "register_formats" in plugins["faregate-adapter-openai"]["hooks"]
            assert plugins["faregate-adapter-openai"]["version"]
            # the service still serves its other plugins
            resp = client.post("/v1/chat/completions", json={"model": "m", "messages": []})
            assert resp.status_code == 401
    finally:
        proc.stop()
    assert "faregate-broken-example failed to load" in proc.logs()

    only = GatewayProcess(str(tmp_path / "data2"), env={**env, "FAREGATE_PLUGINS": "faregate-adapter-openai"})
    only.start()
    try:
        with _login(only.base_url) as client:
            names = {p["name"] for p in client.get("/api/plugins").json()["data"] if not p["builtin"]}
            assert names == {"faregate-adapter-openai"}
    finally:
        only.stop()
