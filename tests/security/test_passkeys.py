"""Attacks on passkeys (issue 16): a challenge is answered once (a replayed finish, or an
old session cookie naming a used challenge, finds nothing); a cloned key whose counter does
not move forward is refused; an assertion made for another origin, or signed by another
key, is refused; registering needs a login session; anonymous login starts are limited per
client IP and leave one challenge per session."""

from __future__ import annotations

import httpx

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate_auth_passkeys.testing import SoftAuthenticator

ORIGIN = "http://localhost:3000"


async def _registered(admin: AdminClient) -> SoftAuthenticator:
    await admin.set_option("ServerAddress", ORIGIN)
    await admin.set_option("passkey.enabled", True)
    key = SoftAuthenticator(ORIGIN)
    await admin.ok("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD})
    options = (await admin.ok("POST", "/api/user/passkey/register/begin"))["options"]
    await admin.ok("POST", "/api/user/passkey/register/finish", json=key.create(options))
    return key


async def test_a_challenge_is_answered_once(gateway: GatewayServer, admin: AdminClient) -> None:
    key = await _registered(admin)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        begun = await http.post("/api/user/passkey/login/begin")
        cookie = begun.cookies.get("session")
        assertion = key.get(begun.json()["data"]["options"])
        first = await http.post("/api/user/passkey/login/finish", json=assertion)
        assert first.json()["success"] is True
    # the same assertion again, with the cookie that named the challenge: nothing is waiting
    async with httpx.AsyncClient(base_url=gateway.base_url) as replay:
        again = await replay.post("/api/user/passkey/login/finish", json=assertion,
                                  headers={"Cookie": f"session={cookie}"})
        assert again.json()["success"] is False and "begin again" in again.json()["message"]
        fresh = key.get((await replay.post("/api/user/passkey/login/begin")).json()["data"]["options"])
        assert (await replay.post("/api/user/passkey/login/finish", json=fresh)).json()["success"] is True


async def test_a_counter_that_goes_back_is_refused(gateway: GatewayServer, admin: AdminClient) -> None:
    key = await _registered(admin)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        options = (await http.post("/api/user/passkey/login/begin")).json()["data"]["options"]
        assert (await http.post("/api/user/passkey/login/finish", json=key.get(options, count=7))).json()["success"]
        # a clone of the key, still at an older count
        options = (await http.post("/api/user/passkey/login/begin")).json()["data"]["options"]
        cloned = (await http.post("/api/user/passkey/login/finish", json=key.get(options, count=5))).json()
        assert cloned["success"] is False and "sign count" in cloned["message"]
        options = (await http.post("/api/user/passkey/login/begin")).json()["data"]["options"]
        assert (await http.post("/api/user/passkey/login/finish", json=key.get(options, count=8))).json()["success"]


async def test_other_origins_and_keys_are_refused(gateway: GatewayServer, admin: AdminClient) -> None:
    key = await _registered(admin)
    impostor = SoftAuthenticator(ORIGIN)
    impostor.credential_id, impostor.user_handle, impostor.rp_id = key.credential_id, key.user_handle, key.rp_id
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        for attempt in ({"origin": "http://evil.localhost:3000"}, {}):
            signer = key if attempt else impostor
            options = (await http.post("/api/user/passkey/login/begin")).json()["data"]["options"]
            answer = (await http.post("/api/user/passkey/login/finish", json=signer.get(options, **attempt))).json()
            assert answer["success"] is False, attempt
        # a finish without a begin, and a malformed credential
        assert (await http.post("/api/user/passkey/login/finish", json=key.get({"challenge": "AAAA"}))).json()[
            "success"] is False
        bad = await http.post("/api/user/passkey/login/finish", json={"id": "x", "type": "password"})
        assert bad.status_code == 400
        # registering is for a logged-in user only
        assert (await http.post("/api/user/passkey/register/begin")).status_code == 401


async def test_login_starts_are_limited_per_client(gateway: GatewayServer, admin: AdminClient) -> None:
    """Anyone may begin a passkey login, and each begin writes a challenge row: a session
    keeps one (the older is dropped), a client IP begins at most 20 a minute."""
    await admin.set_option("ServerAddress", ORIGIN)
    await admin.set_option("passkey.enabled", True)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        statuses = [(await http.post("/api/user/passkey/login/begin")).status_code for _ in range(21)]
        assert await m.AuthFlow.filter(purpose="passkey_login").count() == 1
        refused = await http.post("/api/user/passkey/login/begin")
    assert statuses == [200] * 20 + [429]
    assert refused.status_code == 429 and refused.json()["success"] is False
