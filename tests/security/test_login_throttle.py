"""Login floods (issue 8, #13): failed logins are throttled per account and per client IP
with a 429 in the management envelope; an unknown name costs what a known one does (a
dummy hash is verified); argon2 runs off the event loop, so relays keep flowing."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import httpx
import pytest

from faregate.security import passwords
from faregate.security.throttle import LoginThrottle, MemoryCounters, RedisCounters
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayProcess, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

WRONG = "username or password is wrong, or the user has been banned"
REDIS_URL = "redis://127.0.0.1:6379/15"  # a database of its own: counters of other suites never meet these


async def _login(http: httpx.AsyncClient, username: str, password: str, base_url: str = "") -> httpx.Response:
    return await http.post(base_url + "/api/user/login", json={"username": username, "password": password})


def _assert_throttled(resp: httpx.Response) -> None:
    assert resp.status_code == 429
    body = resp.json()
    assert body["success"] is False and "too many" in body["message"]
    assert int(resp.headers["Retry-After"]) >= 1


async def _gateway(make_gateway: Any, **settings: Any) -> tuple[GatewayServer, AdminClient]:
    gw: GatewayServer = await make_gateway(settings=settings)
    admin = AdminClient(gw.base_url)
    await admin.setup_root()
    return gw, admin


class _Clock:
    """The throttle's clock, moved on by the test: a window of real seconds made the test
    depend on how fast three argon2 checks run on a loaded machine."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset


async def test_wrong_passwords_lock_the_account_until_the_window_ends(make_gateway: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from faregate.security import throttle

    clock = _Clock()
    monkeypatch.setattr(throttle, "time", clock)
    gw, admin = await _gateway(make_gateway, login_max_failures_per_account=3, login_max_failures_per_ip=1000,
                               login_window_seconds=60)
    await admin.ok("POST", "/api/user/", json={"username": "alice", "password": "alice-password-1"})
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        for _ in range(3):
            resp = await _login(http, "root", "wrong-password")
            assert resp.status_code == 200 and resp.json() == {"success": False, "message": WRONG}
        _assert_throttled(await _login(http, "root", "wrong-password"))
        # locked means locked: the right password is refused too, before it is checked
        _assert_throttled(await _login(http, "root", ROOT_PASSWORD))
        # per account: another account from the same address is not affected
        assert (await _login(http, "alice", "alice-password-1")).json()["success"] is True
        clock.offset += 61  # the window ends
        assert (await _login(http, "root", ROOT_PASSWORD)).json()["success"] is True
    await admin.close()


async def test_a_name_spraying_client_ip_is_throttled(make_gateway: Any) -> None:
    gw, admin = await _gateway(make_gateway, login_max_failures_per_account=1000, login_max_failures_per_ip=5,
                               login_window_seconds=60)
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        for i in range(5):
            assert (await _login(http, f"nobody{i}", "guess")).json() == {"success": False, "message": WRONG}
        _assert_throttled(await _login(http, "nobody-else", "guess"))
        _assert_throttled(await _login(http, "root", ROOT_PASSWORD))
    await admin.close()


async def test_successful_logins_do_not_count_against_the_ip(make_gateway: Any) -> None:
    gw, admin = await _gateway(make_gateway, login_max_failures_per_ip=3, login_window_seconds=60)
    async with httpx.AsyncClient(base_url=gw.base_url) as http:  # an office behind one NAT address
        for _ in range(10):
            assert (await _login(http, "root", ROOT_PASSWORD)).json()["success"] is True
    await admin.close()


async def test_a_password_change_cannot_guess_the_current_password(make_gateway: Any) -> None:
    """A stolen session cannot walk through passwords at ``PUT /api/user/self``: each wrong
    original password counts in the throttle, in the budget ``POST /api/verify``'s password
    check spends too, and a locked account refuses the right one there as well."""
    gw, admin = await _gateway(make_gateway, login_max_failures_per_account=3, login_max_failures_per_ip=1000)
    change = {"password": "a-new-password-1"}
    for _ in range(3):
        wrong = await admin.call("PUT", "/api/user/self", json={**change, "original_password": "a-guess"})
        assert wrong == {"success": False, "message": "the original password is wrong"}
    for method, path, body in (("PUT", "/api/user/self", {**change, "original_password": ROOT_PASSWORD}),
                               ("POST", "/api/verify", {"method": "password", "code": ROOT_PASSWORD})):
        _assert_throttled(await admin.http.request(method, path, json=body,
                                                   headers={"New-Api-User": str(admin.user_id)}))
    await admin.close()


async def test_unknown_and_known_names_take_the_same_path(make_gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    gw, admin = await _gateway(make_gateway)
    calls: list[tuple[str, int]] = []
    verify = passwords.verify_password

    def counting_verify(stored: str, password: str) -> bool:
        calls.append((stored, threading.get_ident()))
        return verify(stored, password)

    monkeypatch.setattr(passwords, "verify_password", counting_verify)
    loop_thread = threading.get_ident()
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        unknown = await _login(http, "no-such-user", "guess")
        assert len(calls) == 1 and calls[0][0] == passwords.dummy_hash()
        known = await _login(http, "root", "guess")
        assert len(calls) == 2 and calls[1][0] != passwords.dummy_hash()
    assert unknown.status_code == known.status_code and unknown.json() == known.json()
    assert all(thread != loop_thread for _, thread in calls)  # argon2 ran in the pool
    await admin.close()


async def test_relays_keep_flowing_during_a_login_flood(make_gateway: Any) -> None:
    # limits off: every flood request really runs argon2
    gw, admin = await _gateway(make_gateway, login_max_failures_per_account=0, login_max_failures_per_ip=0)
    async with FakeOpenAI(models=["gpt-4o-mini"]) as upstream:
        await admin.add_channel(base_url=upstream.base_url, models="gpt-4o-mini")
        key = await admin.add_token(unlimited=True)
        async with httpx.AsyncClient(base_url=gw.base_url, timeout=60) as http:

            async def flood() -> list[int]:
                return [(await _login(http, "root", f"guess-{i}")).status_code for i in range(40)]

            async def relay() -> int:
                resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                                       json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
                return resp.status_code

            results = await asyncio.gather(*(flood() for _ in range(4)), *(relay() for _ in range(30)))
    floods, relays = results[:4], results[4:]
    assert all(status == 200 for statuses in floods for status in statuses)  # 200 + success: false
    assert relays == [200] * 30
    await admin.close()


# -- the throttle itself ------------------------------------------------------------------
async def test_an_account_is_counted_across_client_ips() -> None:
    throttle = LoginThrottle(MemoryCounters(), window=60, per_account=3, per_ip=100)
    for i in range(3):
        assert await throttle.attempt(f"10.0.0.{i}", "Root") is None
    wait = await throttle.attempt("10.0.0.9", "root ")  # names are compared as casefolded
    assert wait is not None and 1 <= wait <= 60


@pytest.fixture
def redis_url() -> str:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL).ping()
    except redis.RedisError:
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    return REDIS_URL


async def test_redis_counters_are_shared_by_every_worker(redis_url: str) -> None:
    import redis.asyncio as aioredis

    def worker() -> LoginThrottle:
        return LoginThrottle(RedisCounters(aioredis.from_url(redis_url)), window=30, per_account=4, per_ip=0)

    a, b = worker(), worker()
    account = f"user-{uuid.uuid4().hex}"
    for throttle in (a, b, a, b):
        assert await throttle.attempt("10.0.0.1", account) is None
    assert await b.attempt("10.0.0.1", account) is not None
    assert await a.attempt("10.0.0.1", account) is not None
    await a.succeeded("10.0.0.1", account)  # clears the account everywhere
    assert await b.attempt("10.0.0.1", account) is None
    await a.aclose()
    await b.aclose()


async def test_nodes_sharing_redis_share_the_throttle(tmp_path: Any, redis_url: str) -> None:
    env = {"FAREGATE_REDIS_URL": redis_url, "FAREGATE_LOGIN_MAX_FAILURES_PER_ACCOUNT": "4",
           "FAREGATE_LOGIN_MAX_FAILURES_PER_IP": "0", "FAREGATE_LOGIN_WINDOW_SECONDS": "30"}
    nodes = [GatewayProcess(str(tmp_path / name), env=env) for name in ("a", "b")]
    account = f"user-{uuid.uuid4().hex}"
    try:
        await asyncio.gather(*(asyncio.to_thread(node.start) for node in nodes))
        async with httpx.AsyncClient() as http:
            for node in (*nodes, *nodes):
                assert (await _login(http, account, "guess", node.base_url)).status_code == 200
            _assert_throttled(await _login(http, account, "guess", nodes[1].base_url))
    finally:
        for node in nodes:
            node.stop()


async def test_an_unreachable_redis_falls_back_to_this_workers_counters() -> None:
    import redis.asyncio as aioredis

    throttle = LoginThrottle(RedisCounters(aioredis.from_url("redis://127.0.0.1:1/0")), window=30,
                             per_account=2, per_ip=0)
    assert await throttle.attempt("10.0.0.1", "root") is None
    assert await throttle.attempt("10.0.0.1", "root") is None
    assert await throttle.attempt("10.0.0.1", "root") is not None
    await throttle.aclose()
