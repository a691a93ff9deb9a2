"""The data directory, the SQLite database and the secrets are private to the service's
user; the session cookie is HttpOnly, SameSite=Lax, and Secure when served over https
(issue 8, #8)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import httpx

from faregate.testing.harness import ROOT_PASSWORD, GatewayServer


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


async def test_data_dir_and_database_are_private(make_gateway, tmp_path: Path) -> None:
    old = os.umask(0o022)  # a common default that would make files world-readable
    try:
        data_dir = tmp_path / "fresh" / "data"
        await make_gateway(data_dir=str(data_dir))
    finally:
        os.umask(old)
    assert _mode(data_dir) == 0o700
    for name in ("faregate.db", "crypto.secret", "session.secret", "faregate.epoch"):
        assert _mode(data_dir / name) & 0o077 == 0, name
    leftovers = [p.name for p in data_dir.iterdir() if _mode(p) & 0o077]
    assert leftovers == []


async def _login_cookie(server: GatewayServer) -> str:
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        await http.post("/api/setup", json={"username": "root", "password": ROOT_PASSWORD,
                                            "confirmPassword": ROOT_PASSWORD})
        resp = await http.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})
        assert resp.json()["success"]
        return resp.headers["set-cookie"]


async def test_session_cookie_flags(make_gateway) -> None:
    cookie = (await _login_cookie(await make_gateway())).lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "secure" not in cookie.replace("httponly", "")


async def test_session_cookie_is_secure_over_https(make_gateway) -> None:
    cookie = (await _login_cookie(await make_gateway(settings={"secure_cookies": True}))).lower()
    assert "; secure" in cookie
