"""TOTP 2FA end to end: setup with QR data, enable, status, the login's second step (a fresh
session after it), backup codes, new backup codes, disable, secure verification and the
admin's removal, against a real gateway, with codes computed by pyotp from the secret."""

from __future__ import annotations

from typing import Any

import httpx
import pyotp
import pytest

from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate_auth_totp import factor as totp_factor
from faregate_auth_totp.models import TotpSecret


class Clock:
    """The factor's clock, moved a step at a time (each code is accepted once per step)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1_800_000_000.0
        monkeypatch.setattr(totp_factor, "now", lambda: self.now)

    def code(self, secret: str) -> str:
        self.now += 30
        return pyotp.TOTP(secret).at(self.now)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(monkeypatch)


async def enable_2fa(client: AdminClient, clock: Clock) -> dict[str, Any]:
    setup: dict[str, Any] = await client.ok("POST", "/api/user/2fa/setup")
    await client.ok("POST", "/api/user/2fa/enable", json={"code": clock.code(setup["secret"])})
    return setup


async def test_setup_enable_and_status(gateway: GatewayServer, admin: AdminClient, clock: Clock) -> None:
    assert await admin.ok("GET", "/api/user/2fa/status") == {"enabled": False, "locked": False}
    setup = await admin.ok("POST", "/api/user/2fa/setup")
    assert setup["qr_code_data"].startswith("otpauth://totp/Faregate:root?secret=" + setup["secret"])
    assert len(setup["backup_codes"]) == 4 and all(len(c) == 9 and c[4] == "-" for c in setup["backup_codes"])
    row = await TotpSecret.get(user_id=admin.user_id)
    assert setup["secret"] not in row.secret_enc and row.secret_enc.startswith("enc:v1:")  # encrypted at rest
    # still pending: the wrong code does not enable it
    assert (await admin.call("POST", "/api/user/2fa/enable", json={"code": "000000"}))["success"] is False
    await admin.ok("POST", "/api/user/2fa/enable", json={"code": clock.code(setup["secret"])})
    status = await admin.ok("GET", "/api/user/2fa/status")
    assert status == {"enabled": True, "locked": False, "backup_codes_remaining": 4}
    assert (await admin.ok("GET", "/api/user/self"))["username"] == "root"  # the enabling session goes on
    assert (await admin.call("POST", "/api/user/2fa/setup"))["success"] is False  # enabled: disable first
    stats = await admin.ok("GET", "/api/user/2fa/stats")
    assert stats == {"total_users": 1, "enabled_users": 1, "enabled_rate": 100.0}


async def test_login_waits_for_the_second_step(gateway: GatewayServer, admin: AdminClient, clock: Clock) -> None:
    setup = await enable_2fa(admin, clock)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        first = await http.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})
        body = first.json()
        assert body["success"] is True and body["data"]["require_2fa"] is True and body["data"]["flow_token"]
        pending = first.cookies.get("session")
        # the pending session is no login
        headers = {"New-Api-User": str(admin.user_id)}
        assert (await http.get("/api/user/self", headers=headers)).json()["success"] is False
        wrong = (await http.post("/api/user/login/2fa", json={"code": "000000"})).json()
        assert wrong["success"] is False
        second = await http.post("/api/user/login/2fa", json={"code": clock.code(setup["secret"])})
        assert second.json()["data"]["username"] == "root"
        assert second.cookies.get("session") not in (None, pending)  # a new session at 2FA completion
        assert (await http.get("/api/user/self", headers=headers)).json()["success"] is True
    # newer clients carry the flow token instead of the session; a backup code works once
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        token = (await http.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})).json()[
            "data"]["flow_token"]
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        done = (await http.post("/api/user/login/2fa", json={"code": setup["backup_codes"][0],
                                                             "flow_token": token})).json()
        assert done["success"] is True
    assert (await admin.ok("GET", "/api/user/2fa/status"))["backup_codes_remaining"] == 3


async def test_backup_codes_disable_and_admin_reset(gateway: GatewayServer, admin: AdminClient, clock: Clock) -> None:
    setup = await enable_2fa(admin, clock)
    fresh = await admin.ok("POST", "/api/user/2fa/backup_codes", json={"code": clock.code(setup["secret"])})
    assert set(fresh["backup_codes"]).isdisjoint(setup["backup_codes"])
    # a backup code is no TOTP code for regenerating, and the old set is gone
    assert (await admin.call("POST", "/api/user/2fa/disable", json={"code": setup["backup_codes"][1]}))[
        "success"] is False
    await admin.ok("POST", "/api/user/2fa/disable", json={"code": fresh["backup_codes"][0]})
    assert (await admin.ok("GET", "/api/user/2fa/status"))["enabled"] is False
    # secure verification with 2FA, then the admin's removal of another user's 2FA
    await admin.ok("POST", "/api/user/", json={"username": "worker", "password": ROOT_PASSWORD})
    worker = AdminClient(gateway.base_url)
    worker.user_id = (await worker.ok("POST", "/api/user/login", json={"username": "worker",
                                                                         "password": ROOT_PASSWORD}))["id"]
    wsetup = await enable_2fa(worker, clock)
    assert (await worker.call("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD}))[
        "success"] is False  # enrolled: the second factor it is
    assert (await worker.ok("POST", "/api/verify", json={"method": "2fa", "code": clock.code(wsetup["secret"])}))[
        "verified"] is True
    await admin.ok("DELETE", f"/api/user/{worker.user_id}/2fa")
    assert not await TotpSecret.exists(user_id=worker.user_id)
    assert (await worker.call("GET", "/api/user/self"))["success"] is False  # the removal ended the sessions
    logs = await admin.ok("GET", "/api/log/", params={"type": 3, "username": "worker", "start_timestamp": 0})
    assert any("enabled two-factor" in row["content"] for row in logs["items"])
    assert any("removed the user's two-factor" in row["content"] for row in logs["items"])
    await worker.close()
