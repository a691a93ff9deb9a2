"""Attacks on OAuth logins (issue 16), against a local fake provider: a callback whose state
is not the one this browser's session was given (login CSRF, a stolen link) is refused, a
state works once and only for its provider; ``return_to`` never leads off the site (open
redirect); a provider account bound to one user cannot be bound to another; a banned user
does not get in through a provider."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
import pytest_asyncio

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient
from faregate_auth_oauth.testing import USERS, FakeOAuthProvider, OAuthSite, configure


@pytest_asyncio.fixture
async def site(make_gateway: object) -> AsyncIterator[OAuthSite]:
    async with FakeOAuthProvider("github", user=dict(USERS["github"])) as fake:
        gw = await make_gateway(settings={"oauth_private_addresses": "allow",  # type: ignore[operator]
                                          "oauth_github_base_url": fake.base_url})
        admin = AdminClient(gw.base_url)
        await admin.setup_root()
        await configure(admin, fake)
        yield OAuthSite(gw, admin, fake)
        await admin.close()


async def test_a_state_belongs_to_its_session_and_is_used_once(site: OAuthSite) -> None:
    base = site.gateway.base_url
    async with httpx.AsyncClient(base_url=base) as attacker, httpx.AsyncClient(base_url=base) as victim:
        # login CSRF: the attacker's own approved callback, opened in the victim's browser
        back = site.approve(await site.state(attacker))
        forced = await victim.get("/api/oauth/github", params=back)
        assert forced.status_code == 403 and "state" in forced.json()["message"]
        assert "session" not in forced.cookies or not forced.json()["success"]
        # no state at all, or a guessed one
        assert (await victim.get("/api/oauth/github", params={"code": back["code"]})).status_code == 403
        await site.state(victim)
        assert (await victim.get("/api/oauth/github", params={**back, "state": "guess"})).status_code == 403
    async with httpx.AsyncClient(base_url=base) as browser:
        state = await site.state(browser)
        cookie = browser.cookies.get("session")
        assert (await browser.get("/api/oauth/github", params=site.approve(state))).json()["success"] is True
    # replay: the same state with the cookie that held it
    async with httpx.AsyncClient(base_url=base) as replay:
        again = await replay.get("/api/oauth/github", params=site.approve(state),
                                 headers={"Cookie": f"session={cookie}"})
        assert again.status_code == 403


async def test_a_state_is_for_its_provider(site: OAuthSite) -> None:
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        start = await http.get("/api/oauth/github/authorize")
        params = dict(parse_qsl(urlsplit(start.headers["Location"]).query))
        back = dict(parse_qsl(urlsplit(site.fake.approve(params)).query))
        mixed = await http.get("/api/oauth/discord", params=back)
        assert mixed.status_code == 403 and "another provider" in mixed.json()["message"]


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x", "/\\evil.example", "\\\\evil",
                                    "javascript:alert(1)", "/ok\r\nLocation: https://evil.example", "evil.example"])
async def test_return_to_never_leaves_the_site(site: OAuthSite, target: str) -> None:
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        refused = await http.get("/api/oauth/github/authorize", params={"return_to": target})
        assert refused.status_code == 400 and "Location" not in refused.headers


async def test_the_callback_redirects_only_where_the_flow_began(site: OAuthSite) -> None:
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        start = await http.get("/api/oauth/github/authorize", params={"return_to": "/console"})
        params = dict(parse_qsl(urlsplit(start.headers["Location"]).query))
        back = dict(parse_qsl(urlsplit(site.fake.approve(params)).query))
        done = await http.get("/api/oauth/github", params={**back, "return_to": "https://evil.example"})
        assert done.status_code == 302 and done.headers["Location"] == "/console"


async def test_an_account_is_bound_once(site: OAuthSite) -> None:
    admin = site.admin
    await admin.ok("GET", "/api/oauth/github", params=site.approve(await site.state(admin.http)))
    await admin.ok("POST", "/api/user/", json={"username": "mallory", "password": ROOT_PASSWORD})
    mallory = AdminClient(site.gateway.base_url)
    mallory.user_id = (await mallory.ok("POST", "/api/user/login", json={"username": "mallory",
                                                                           "password": ROOT_PASSWORD}))["id"]
    stolen = await mallory.call("GET", "/api/oauth/github", params=site.approve(await site.state(mallory.http)))
    assert stolen["success"] is False and "already bound" in stolen["message"]
    assert await m.UserBinding.filter(provider="github").count() == 1
    await mallory.close()


async def test_a_banned_user_does_not_get_in(site: OAuthSite) -> None:
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        user = (await site.login(http)).json()["data"]
    await site.admin.ok("POST", "/api/user/manage", json={"id": user["id"], "action": "disable"})
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as http:
        banned = (await site.login(http)).json()
        assert banned["success"] is False and "banned" in banned["message"]


async def test_starting_flows_is_limited_and_bounded(site: OAuthSite, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each start leaves a state row for ten minutes: a session keeps one (asking again drops
    the older), a client IP starts at most ``oauth_starts_per_ip`` a minute, and no start is
    taken while the live states reach the cap, so anonymous requests cannot fill the table."""
    from faregate.accounts import service

    async with httpx.AsyncClient(base_url=site.gateway.base_url) as browser:
        first = await site.state(browser)
        for _ in range(9):
            await site.state(browser)
        assert await m.AuthFlow.filter(purpose="oauth_state").count() == 1
        dropped = await browser.get("/api/oauth/github", params=site.approve(first))
        assert dropped.status_code == 403  # only the newest state of the session is live
    monkeypatch.setattr(service, "MAX_LIVE_STARTS", 3)
    answers = []
    for _ in range(4):
        async with httpx.AsyncClient(base_url=site.gateway.base_url) as visitor:  # a session each
            answers.append(await visitor.get("/api/oauth/state"))
    assert [a.status_code for a in answers] == [200, 200, 503, 503]  # one live already, from the browser
    assert answers[-1].json()["success"] is False and answers[-1].headers["Retry-After"] == "60"
    monkeypatch.setattr(service, "MAX_LIVE_STARTS", 10_000)
    async with httpx.AsyncClient(base_url=site.gateway.base_url) as flood:
        statuses = [(await flood.get("/api/oauth/state")).status_code for _ in range(8)]
        start = await flood.get("/api/oauth/github/authorize")
    assert statuses[:6] == [200] * 6 and statuses[6:] == [429, 429]  # 20 a minute: 14 were used above
    assert start.status_code == 429 and int(start.headers["Retry-After"]) >= 1
