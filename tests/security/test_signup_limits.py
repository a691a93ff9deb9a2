"""Sign-up floods (issue 26, H4): 30 registrations from one address with one invitation code
all succeeded and farmed the inviter's reward 30 times. Now account creation is rate limited
as new-api's critical routes are (``CRITICAL_RATE_LIMIT`` sign-ups per
``CRITICAL_RATE_LIMIT_DURATION`` seconds per client IP, 20 per 1200 s by default, shared by
every worker and node through Redis) and per invitation code from any addresses
(``FAREGATE_INVITATION_CODE_RATE_LIMIT``); past either a sign-up answers 429 with
``Retry-After``, no account is made and nobody is credited."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from typing import Any

import httpx
import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayProcess, GatewayServer
from faregate_auth_oauth.testing import USERS, FakeOAuthProvider, OAuthSite, configure

PASSWORD = "a-long-password-1"
INVITER_REWARD = 5000
REDIS_URL = "redis://127.0.0.1:6379/15"


async def _gateway(make_gateway: Any, **settings: Any) -> tuple[GatewayServer, AdminClient, str]:
    gw: GatewayServer = await make_gateway(settings=settings)
    admin = AdminClient(gw.base_url)
    await admin.setup_root()
    await admin.set_option("QuotaForInviter", str(INVITER_REWARD))
    return gw, admin, str(await admin.ok("GET", "/api/user/aff"))


async def _register(http: httpx.AsyncClient, username: str, aff_code: str = "", address: str = "",
                    base_url: str = "") -> httpx.Response:
    headers = {"X-Forwarded-For": address} if address else {}
    return await http.post(base_url + "/api/user/register", headers=headers,
                           json={"username": username, "password": PASSWORD, "aff_code": aff_code})


def _assert_refused(resp: httpx.Response, window: int) -> None:
    assert resp.status_code == 429, resp.text
    assert resp.json()["success"] is False and "too many sign-ups" in resp.json()["message"]
    assert 1 <= int(resp.headers["Retry-After"]) <= window


async def _inviter(admin: AdminClient) -> tuple[int, int]:
    me = await admin.ok("GET", "/api/user/self")
    return int(me["aff_count"]), int(me["aff_quota"])


async def test_one_address_signs_up_at_most_new_apis_critical_limit(make_gateway: Any) -> None:
    """The defaults are new-api's: 20 sign-ups per 1200 s per address."""
    gw, admin, code = await _gateway(make_gateway, invitation_code_rate_limit=0)  # this test bounds the address
    async with httpx.AsyncClient(base_url=gw.base_url, timeout=60) as http:
        answers = [await _register(http, f"farm{i}", code) for i in range(30)]
    assert [a.json()["success"] for a in answers[:20]] == [True] * 20
    for refused in answers[20:]:
        _assert_refused(refused, 1200)
    assert await m.User.filter(inviter_id=admin.user_id).count() == 20
    assert not await m.User.filter(username__in=[f"farm{i}" for i in range(20, 30)]).exists()
    assert await _inviter(admin) == (20, 20 * INVITER_REWARD)  # credited for the sign-ups made only
    await admin.close()


async def test_an_invitation_code_brings_in_a_bounded_number_of_accounts(make_gateway: Any) -> None:
    """From many addresses (each within its own limit), one code is credited at most
    ``invitation_code_rate_limit`` times per window; sign-ups without it go on."""
    gw, admin, code = await _gateway(make_gateway, trusted_proxies=("127.0.0.1",), invitation_code_rate_limit=3,
                                     invitation_code_rate_limit_duration=3600)
    async with httpx.AsyncClient(base_url=gw.base_url, timeout=60) as http:
        answers = [await _register(http, f"sock{i}", code, address=f"198.51.100.{i + 1}") for i in range(8)]
        assert [a.json()["success"] for a in answers[:3]] == [True] * 3
        for refused in answers[3:]:
            _assert_refused(refused, 3600)
        # the limit is the code's, not the addresses': without it (or with a code nobody owns) sign-up works
        assert (await _register(http, "plain", address="198.51.100.1")).json()["success"] is True
        assert (await _register(http, "stray", "zzzz" if code != "zzzz" else "yyyy",
                                address="198.51.100.2")).json()["success"] is True
    assert await m.User.filter(inviter_id=admin.user_id).count() == 3
    assert await _inviter(admin) == (3, 3 * INVITER_REWARD)
    await admin.close()


async def test_outside_sign_ups_count_in_the_same_limits(make_gateway: Any) -> None:
    """A new account made by an OAuth login is an account made: per code and per address."""
    async with FakeOAuthProvider("github", user=dict(USERS["github"])) as fake:
        gw, admin, code = await _gateway(make_gateway, oauth_private_addresses="allow",
                                         oauth_github_base_url=fake.base_url, invitation_code_rate_limit=2)
        await configure(admin, fake)
        site = OAuthSite(gw, admin, fake)
        statuses = []
        for i in range(4):
            fake.user = {**USERS["github"], "id": 5000 + i, "login": f"octo{i}", "email": f"octo{i}@example.com"}
            async with httpx.AsyncClient(base_url=gw.base_url) as browser:
                back = site.approve(await site.state(browser, aff=code))
                statuses.append((await browser.get("/api/oauth/github", params=back)).status_code)
        assert statuses == [200, 200, 429, 429]
        assert await _inviter(admin) == (2, 2 * INVITER_REWARD)
        assert await m.UserBinding.filter(provider="github").count() == 2
        await admin.close()


@pytest.fixture
def redis_url() -> str:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL).ping()
    except redis.RedisError:
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    return REDIS_URL


async def test_nodes_sharing_redis_share_the_address_limit(tmp_path: Any, redis_url: str) -> None:
    """Two nodes (processes) sharing Redis: concurrent sign-ups from one address make exactly
    ``CRITICAL_RATE_LIMIT`` accounts between them (new-api's variable names work)."""
    env = {"FAREGATE_REDIS_URL": redis_url, "CRITICAL_RATE_LIMIT": "4", "CRITICAL_RATE_LIMIT_DURATION": "600",
           "FAREGATE_TRUSTED_PROXIES": "127.0.0.1"}
    nodes = [GatewayProcess(str(tmp_path / name), env=env) for name in ("a", "b")]
    # an address of this run alone: the counters live in a Redis other runs share
    address = f"10.{secrets.randbelow(256)}.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"
    try:
        await asyncio.gather(*(asyncio.to_thread(node.start) for node in nodes))
        async with httpx.AsyncClient(timeout=120) as http:
            answers = await asyncio.gather(*(
                _register(http, f"n{i}-{uuid.uuid4().hex[:8]}", address=address, base_url=nodes[i % 2].base_url)
                for i in range(12)))
    finally:
        for node in nodes:
            node.stop()
    made = [a for a in answers if a.status_code == 200 and a.json()["success"]]
    assert len(made) == 4, [a.text for a in answers]
    for refused in (a for a in answers if a not in made):
        _assert_refused(refused, 600)
