"""Attacks on TOTP 2FA (issue 16): a used code (its 30-second step, or an older one) is
refused, also when two requests race with it; a backup code works once; five wrong codes
lock 2FA for five minutes (the right code too); a pending login's token works once and dies
when the password changes; the password alone never yields a session."""

from __future__ import annotations

import asyncio

import httpx
import pyotp
import pytest

from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate_auth_totp import factor as totp_factor


class Clock:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1_800_000_000.0
        monkeypatch.setattr(totp_factor, "now", lambda: self.now)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(monkeypatch)


async def _enabled(admin: AdminClient, clock: Clock) -> tuple[pyotp.TOTP, list[str]]:
    setup = await admin.ok("POST", "/api/user/2fa/setup")
    totp = pyotp.TOTP(setup["secret"])
    await admin.ok("POST", "/api/user/2fa/enable", json={"code": totp.at(clock.now)})
    return totp, setup["backup_codes"]


async def _pending(base_url: str) -> str:
    async with httpx.AsyncClient(base_url=base_url) as http:
        data = (await http.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})).json()
    assert data["data"]["require_2fa"] is True, data
    return str(data["data"]["flow_token"])


async def _second(base_url: str, token: str, code: str) -> bool:
    async with httpx.AsyncClient(base_url=base_url) as http:
        answer = (await http.post("/api/user/login/2fa", json={"code": code, "flow_token": token})).json()
    return bool(answer["success"])


async def test_a_used_code_is_refused(gateway: GatewayServer, admin: AdminClient, clock: Clock) -> None:
    totp, _ = await _enabled(admin, clock)
    used = totp.at(clock.now)  # enabling used this step
    assert not await _second(gateway.base_url, await _pending(gateway.base_url), used)
    clock.now += 30
    assert await _second(gateway.base_url, await _pending(gateway.base_url), totp.at(clock.now))
    # the previous step is inside the drift window, but older than the last accepted one
    assert not await _second(gateway.base_url, await _pending(gateway.base_url), totp.at(clock.now - 30))
    # two logins racing with one fresh code: one wins
    clock.now += 30
    code = totp.at(clock.now)
    tokens = [await _pending(gateway.base_url) for _ in range(2)]
    results = await asyncio.gather(*(_second(gateway.base_url, t, code) for t in tokens))
    assert sorted(results) == [False, True]


async def test_a_backup_code_works_once(gateway: GatewayServer, admin: AdminClient, clock: Clock) -> None:
    _, backup = await _enabled(admin, clock)
    assert await _second(gateway.base_url, await _pending(gateway.base_url), backup[0].lower())  # any case, dash
    assert not await _second(gateway.base_url, await _pending(gateway.base_url), backup[0])
    verify = await admin.call("POST", "/api/verify", json={"method": "2fa", "code": backup[0]})
    assert verify["success"] is False


async def test_five_failures_lock_2fa(gateway: GatewayServer, admin: AdminClient, clock: Clock) -> None:
    totp, _ = await _enabled(admin, clock)
    token = await _pending(gateway.base_url)
    for _ in range(5):
        assert not await _second(gateway.base_url, token, "000000" if totp.at(clock.now) != "000000" else "111111")
    assert (await admin.ok("GET", "/api/user/2fa/status"))["locked"] is True
    clock.now += 30
    assert not await _second(gateway.base_url, token, totp.at(clock.now))  # locked: the right code waits
    clock.now += totp_factor.LOCK_SECONDS
    assert await _second(gateway.base_url, token, totp.at(clock.now))


async def test_a_pending_login_is_single_use(gateway: GatewayServer, admin: AdminClient, clock: Clock) -> None:
    totp, backup = await _enabled(admin, clock)
    token = await _pending(gateway.base_url)
    clock.now += 30
    assert await _second(gateway.base_url, token, totp.at(clock.now))
    assert not await _second(gateway.base_url, token, backup[0])  # used up
    # a password change kills logins waiting for their second step
    token = await _pending(gateway.base_url)
    clock.now += 30
    await admin.ok("PUT", "/api/user/self", json={"password": "another-password-9", "original_password": ROOT_PASSWORD})
    assert not await _second(gateway.base_url, token, totp.at(clock.now))
