"""OAuth and OIDC against a local fake of each provider (GitHub, Discord, Linux DO, OIDC with
discovery and a JWKS-signed id_token): sign-up and login, binding and unbinding, the
server-started flow (PKCE, nonce, return_to), and each provider's own rules."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import httpx

from faregate.testing.harness import ROOT_PASSWORD, AdminClient
from faregate_auth_oauth.testing import SITE, OAuthSite

FIELD = {"github": "github_id", "discord": "discord_id", "linuxdo": "linux_do_id", "oidc": "oidc_id"}


async def test_sign_up_then_log_in(site: OAuthSite) -> None:
    await site.admin.set_option("QuotaForInvitee", "70")
    aff = await site.admin.ok("GET", "/api/user/aff")
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        # new-api's UI asks for the state with the visitor's invitation code
        back = site.approve(await site.state(http, aff=aff))
        first = (await http.get(f"/api/oauth/{site.name}", params=back)).json()
        assert first["success"] is True, first
        user = first["data"]
        invitee = await site.admin.ok("GET", f"/api/user/{user['id']}")
        assert (invitee["inviter_id"], invitee["quota"]) == (site.admin.user_id, 70)
        assert user["username"] in ("octo", "nelly", "tux", "olive")
        self_view = (await http.get("/api/user/self", headers={"New-Api-User": str(user["id"])})).json()["data"]
        assert self_view[FIELD[site.name]] and self_view["role"] == 1
        # the provider's verified email is kept (Linux DO gives none)
        assert self_view["email"] == {"linuxdo": ""}.get(site.name, self_view["email"]) and (
            site.name == "linuxdo" or "@example.com" in self_view["email"])
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        again = (await site.login(http)).json()
        assert again["data"]["id"] == user["id"]  # the same account, found by the provider's id


async def test_bind_and_unbind(site: OAuthSite) -> None:
    admin = site.admin
    back = site.approve(await site.state(admin.http))
    bound = await admin.ok("GET", f"/api/oauth/{site.name}", params=back)
    assert bound == {"action": "bind"}
    listed = await admin.ok("GET", "/api/user/oauth/bindings")
    assert [b["provider"] for b in listed] == [site.name]
    # the provider's account now logs in as root
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        assert (await site.login(http)).json()["data"]["username"] == "root"
    await admin.ok("DELETE", f"/api/user/oauth/bindings/{site.name}")
    assert await admin.ok("GET", "/api/user/oauth/bindings") == []
    # bound again, then cleared by an admin route (new-api's binding_type names)
    await admin.ok("GET", f"/api/oauth/{site.name}", params=site.approve(await site.state(admin.http)))
    kind = "linux_do" if site.name == "linuxdo" else site.name
    await admin.ok("DELETE", f"/api/user/{admin.user_id}/bindings/{kind}")
    assert await admin.ok("GET", f"/api/user/{admin.user_id}/oauth/bindings") == []


async def test_server_started_flow_with_pkce(site: OAuthSite) -> None:
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        start = await http.get(f"/api/oauth/{site.name}/authorize", params={"return_to": "/console/token"})
        assert start.status_code == 302
        to_provider = urlsplit(start.headers["Location"])
        params = dict(parse_qsl(to_provider.query))
        assert params["redirect_uri"] == f"{SITE}/api/oauth/{site.name}" and params["code_challenge_method"] == "S256"
        assert ("nonce" in params) == (site.name == "oidc")
        back = dict(parse_qsl(urlsplit(site.fake.approve(params)).query))
        done = await http.get(f"/api/oauth/{site.name}", params=back)
        assert done.status_code == 302 and done.headers["Location"] == "/console/token"
        token_call = [s for s in site.fake.seen if s[0] == "POST"][-1][2]
        assert token_call["code_verifier"] and token_call["redirect_uri"] == params["redirect_uri"]
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        # callback=page: back to new-api's page /oauth/<provider>, whose script reads the answer
        start = await http.get(f"/api/oauth/{site.name}/authorize",
                               params={"callback": "page", "return_to": "/console/token"})
        params = dict(parse_qsl(urlsplit(start.headers["Location"]).query))
        assert params["redirect_uri"] == f"{SITE}/oauth/{site.name}" and params["code_challenge_method"] == "S256"
        assert ("nonce" in params) == (site.name == "oidc")
        back = dict(parse_qsl(urlsplit(site.fake.approve(params)).query))
        done = await http.get(f"/api/oauth/{site.name}", params=back)
        assert done.status_code == 200 and done.json()["data"]["username"] in ("octo", "nelly", "tux", "olive")
        token_call = [s for s in site.fake.seen if s[0] == "POST"][-1][2]
        assert token_call["code_verifier"] and token_call["redirect_uri"] == params["redirect_uri"]
        other = await http.get(f"/api/oauth/{site.name}/authorize", params={"callback": "popup"})
        assert other.status_code == 400 and "callback" in other.json()["message"]


async def test_a_user_with_2fa_still_passes_it(site: OAuthSite) -> None:
    import pyotp

    admin = site.admin
    await admin.ok("GET", f"/api/oauth/{site.name}", params=site.approve(await site.state(admin.http)))
    setup = await admin.ok("POST", "/api/user/2fa/setup")
    await admin.ok("POST", "/api/user/2fa/enable", json={"code": pyotp.TOTP(setup["secret"]).now()})
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        answer = (await site.login(http)).json()
        assert answer["data"]["require_2fa"] is True  # the provider alone is not enough
        assert (await http.get("/api/user/self", headers={"New-Api-User": str(admin.user_id)})).json()[
            "success"] is False
        done = (await http.post("/api/user/login/2fa", json={"code": setup["backup_codes"][0]})).json()
        assert done["data"]["username"] == "root"


async def test_provider_rules(site: OAuthSite) -> None:
    admin: AdminClient = site.admin
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        if site.name == "linuxdo":
            await admin.set_option("LinuxDOMinimumTrustLevel", "3")
            low = (await site.login(http)).json()
            assert low["success"] is False and "trust level" in low["message"]
        elif site.name == "oidc":
            site.fake.forge_id_token = True  # signed by a key not in the provider's JWKS
            forged = (await site.login(http)).json()
            assert forged["success"] is False and "id_token" in forged["message"]
        else:
            await admin.set_option("RegisterEnabled", False)
            closed = (await site.login(http)).json()
            assert closed["success"] is False and "closed" in closed["message"]
        # a provider that is switched off refuses its callback
        await admin.set_option({"github": "GitHubOAuthEnabled", "discord": "discord.enabled",
                                "linuxdo": "LinuxDOOAuthEnabled", "oidc": "oidc.enabled"}[site.name], False)
        off = (await site.login(http)).json()
        assert off["success"] is False and "not enabled" in off["message"]
    assert (await admin.call("POST", "/api/verify", json={"method": "password", "code": ROOT_PASSWORD}))["success"]
