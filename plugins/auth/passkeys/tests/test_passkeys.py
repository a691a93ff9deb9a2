"""Passkeys end to end with a software authenticator: register, status, discoverable login
(a second factor on its own), verify then ``POST /api/verify``, delete and the admin's
reset, on a real gateway."""

from __future__ import annotations

import httpx

from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate.testing.tables import pending_migrations
from faregate_auth_passkeys.models import TABLES
from faregate_auth_passkeys.testing import SoftAuthenticator

ORIGIN = "http://localhost:3000"


async def test_models_match_migrations() -> None:
    assert await pending_migrations(TABLES) == []


async def enable(admin: AdminClient) -> None:
    await admin.set_option("ServerAddress", ORIGIN)
    await admin.set_option("passkey.enabled", True)


async def register(client: AdminClient) -> SoftAuthenticator:
    key = SoftAuthenticator(ORIGIN)
    # adding a key needs a fresh secure verification (no factor yet: the password)
    refused = await client.http.post("/api/user/passkey/register/begin", headers={"New-Api-User": str(client.user_id)})
    assert refused.status_code == 403 and refused.json()["code"] == "VERIFICATION_REQUIRED"
    await client.ok("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD})
    options = (await client.ok("POST", "/api/user/passkey/register/begin"))["options"]
    assert options["rp"]["id"] == "localhost" and options["authenticatorSelection"]["residentKey"] == "required"
    await client.ok("POST", "/api/user/passkey/register/finish", json=key.create(options))
    return key


async def login(base_url: str, key: SoftAuthenticator, **kwargs: object) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base_url) as http:
        options = (await http.post("/api/user/passkey/login/begin")).json()["data"]["options"]
        assert "allowCredentials" not in options or not options["allowCredentials"]  # discoverable
        return await http.post("/api/user/passkey/login/finish", json=key.get(options, **kwargs))  # type: ignore[arg-type]


async def test_register_status_login_delete(gateway: GatewayServer, admin: AdminClient) -> None:
    assert "not enabled" in (await admin.call("POST", "/api/user/passkey/login/begin"))["message"]
    await enable(admin)
    assert await admin.ok("GET", "/api/user/passkey") == {"enabled": False}
    key = await register(admin)
    assert (await admin.ok("GET", "/api/user/passkey"))["enabled"] is True
    resp = await login(gateway.base_url, key)
    assert resp.json()["data"]["username"] == "root" and resp.cookies.get("session")
    status = await admin.ok("GET", "/api/user/passkey")
    assert status["last_used_at"] > 0
    await admin.ok("DELETE", "/api/user/passkey")  # within the verification's five minutes
    assert (await login(gateway.base_url, key)).json()["success"] is False


async def test_verify_opens_secure_verification(gateway: GatewayServer, admin: AdminClient) -> None:
    await enable(admin)
    key = await register(admin)
    channel = await admin.add_channel(base_url="http://127.0.0.1:9", models="m", key="sk-passkey-guarded-0123")
    # with a passkey enrolled, the password no longer verifies
    assert (await admin.call("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD}))[
        "success"] is False
    assert (await admin.call("POST", "/api/verify", json={"method": "passkey"}))["success"] is False  # no ceremony
    options = (await admin.ok("POST", "/api/user/passkey/verify/begin"))["options"]
    assert [c["id"] for c in options["allowCredentials"]] == [key.get(options)["id"]]
    await admin.ok("POST", "/api/user/passkey/verify/finish", json=key.get(options))
    assert (await admin.ok("POST", "/api/verify", json={"method": "passkey"}))["verified"] is True
    assert (await admin.ok("POST", f"/api/channel/{channel}/key"))["key"] == "sk-passkey-guarded-0123"
    # the proof is used: a second /api/verify needs a new ceremony
    assert (await admin.call("POST", "/api/verify", json={"method": "passkey"}))["success"] is False


async def test_admin_reset(gateway: GatewayServer, admin: AdminClient) -> None:
    await enable(admin)
    await admin.ok("POST", "/api/user/", json={"username": "pat", "password": ROOT_PASSWORD})
    pat = AdminClient(gateway.base_url)
    pat.user_id = (await pat.ok("POST", "/api/user/login", json={"username": "pat", "password": ROOT_PASSWORD}))["id"]
    key = await register(pat)
    await admin.ok("DELETE", f"/api/user/{pat.user_id}/reset_passkey")
    assert (await admin.call("DELETE", f"/api/user/{pat.user_id}/reset_passkey"))["success"] is False  # nothing left
    assert (await login(gateway.base_url, key)).json()["success"] is False
    await pat.close()
