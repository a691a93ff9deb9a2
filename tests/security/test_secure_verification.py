"""Reading a secret needs a fresh proof of identity (issue 10): a channel's key is revealed
only to root, only within five minutes of ``POST /api/verify``, never through an access
token, never cached; guessing the password or a code through the verification is
throttled like a login."""

from __future__ import annotations

import time

import httpx
import pytest

from faregate.db import models as m
from faregate.management import verification
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer

SECRET = "sk-upstream-secret-0123456789abcdef"


async def _reveal(client: AdminClient, channel_id: int) -> httpx.Response:
    return await client.http.post(f"/api/channel/{channel_id}/key", headers={"New-Api-User": str(client.user_id)})


async def test_reveal_needs_a_recent_verification(gateway: GatewayServer, admin: AdminClient,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    channel_id = await admin.add_channel(base_url="http://127.0.0.1:9", models="m", key=SECRET)
    unverified = await _reveal(admin, channel_id)
    assert unverified.status_code == 403 and unverified.json()["code"] == "VERIFICATION_REQUIRED"
    assert SECRET not in unverified.text
    await admin.ok("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD})
    revealed = await _reveal(admin, channel_id)
    assert revealed.json()["data"] == {"key": SECRET}
    assert revealed.headers["Cache-Control"] == "no-store"
    assert await m.Log.filter(type=m.LOG_MANAGE, channel_id=channel_id).count() == 1
    # five minutes later the proof has expired
    monkeypatch.setattr(verification, "clock", lambda: int(time.time()) + verification.WINDOW + 1)
    expired = await _reveal(admin, channel_id)
    assert expired.status_code == 403 and expired.json()["code"] == "VERIFICATION_EXPIRED"
    monkeypatch.undo()
    again = await _reveal(admin, channel_id)  # an expired proof is cleared, not revived
    assert again.status_code == 403 and again.json()["code"] == "VERIFICATION_REQUIRED"


async def test_only_root_with_a_session_reads_a_channel_key(gateway: GatewayServer, admin: AdminClient) -> None:
    channel_id = await admin.add_channel(base_url="http://127.0.0.1:9", models="m", key=SECRET)
    await admin.ok("POST", "/api/user/", json={"username": "boss", "password": ROOT_PASSWORD, "role": m.ROLE_ADMIN})
    boss = AdminClient(gateway.base_url)
    boss.user_id = (await boss.ok("POST", "/api/user/login", json={"username": "boss", "password": ROOT_PASSWORD}))[
        "id"]
    await boss.ok("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD})
    refused = await _reveal(boss, channel_id)
    assert SECRET not in refused.text and refused.json()["success"] is False
    # root's access token: there is no session to hold a verification
    token = await admin.ok("GET", "/api/user/token")
    await admin.ok("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD})
    async with httpx.AsyncClient(base_url=gateway.base_url) as bare:
        by_token = await bare.post(f"/api/channel/{channel_id}/key",
                                   headers={"Authorization": token, "New-Api-User": str(admin.user_id)})
    assert by_token.status_code == 403 and SECRET not in by_token.text
    await boss.close()


async def test_a_verification_belongs_to_its_user(gateway: GatewayServer, admin: AdminClient) -> None:
    """A session cookie carrying another user's proof (a root logging in as someone else
    keeps no proof: login starts a new session)."""
    channel_id = await admin.add_channel(base_url="http://127.0.0.1:9", models="m", key=SECRET)
    await admin.ok("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD})
    await admin.ok("POST", "/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})
    assert (await _reveal(admin, channel_id)).json()["code"] == "VERIFICATION_REQUIRED"


async def test_guessing_through_verification_is_throttled(gateway: GatewayServer, admin: AdminClient) -> None:
    answers = [await admin.call("POST", "/api/verify", json={"method": "password", "code": f"guess-{i}"})
               for i in range(12)]
    assert any("too many" in a["message"] for a in answers)
    locked = await admin.call("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD})
    assert locked["success"] is False  # locked: the right password is refused too
