"""Login floods (issue 8, #13): failed logins are throttled per account and per client IP
with a 429 in the management envelope; an unknown name costs what a known one does (a
dummy hash is verified); argon2 runs off the event loop, so relays keep flowing.

Lockouts (issue 26, H3): ten wrong passwords from anywhere locked root for everyone, its own
fresh address included. Now a client's failures lock out that client; the account's total
from every address, far higher, locks it for everyone else but a browser that signed in to
it before and a login with a second factor, whose step every locked login gets, right
password or wrong; ``faregate admin unlock`` lifts a lock."""

from __future__ import annotations

import asyncio
import secrets
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

import httpx
import pyotp
import pytest

from faregate.accounts.login import LOCKED_STEP
from faregate.management.devices import COOKIE as DEVICE_COOKIE
from faregate.security import passwords
from faregate.security.throttle import LoginThrottle, MemoryCounters, RedisCounters
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayProcess, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_auth_totp import factor as totp_factor

WRONG = "username or password is wrong, or the user has been banned"
REDIS_URL = "redis://127.0.0.1:6379/15"  # a database of its own: counters of other suites never meet these


async def _login(http: httpx.AsyncClient, username: str, password: str, base_url: str = "",
                 address: str = "") -> httpx.Response:
    """``address``: the client address (X-Forwarded-For, believed from the test's loopback
    when the gateway trusts 127.0.0.1)."""
    headers = {"X-Forwarded-For": address} if address else {}
    return await http.post(base_url + "/api/user/login", headers=headers,
                           json={"username": username, "password": password})


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


@pytest.mark.real_password_hashing  # the flood's cost is argon2's: with the gateway's own parameters
async def test_relays_keep_flowing_during_a_login_flood(make_gateway: Any) -> None:
    # limits off: every flood request really runs argon2
    gw, admin = await _gateway(make_gateway, login_max_failures_per_account=0, login_max_failures_per_ip=0)
    async with FakeOpenAI(models=["gpt-4o-mini"]) as upstream:
        await admin.add_channel(base_url=upstream.base_url, models="gpt-4o-mini")
        key = await admin.add_token(unlimited=True)
        async with httpx.AsyncClient(base_url=gw.base_url, timeout=60) as http:

            relays_done = asyncio.Event()

            async def flood() -> list[int]:
                # wrong passwords until every relay was answered (it used to be 40 a flood, most of
                # them hashed after the relays were done: several seconds of argon2 that proved nothing)
                statuses: list[int] = []
                while not relays_done.is_set() or len(statuses) < 2:
                    statuses.append((await _login(http, "root", f"guess-{len(statuses)}")).status_code)
                return statuses

            async def relay() -> int:
                resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                                       json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
                return resp.status_code

            async def relays() -> list[int]:
                try:
                    return list(await asyncio.gather(*(relay() for _ in range(30))))
                finally:
                    relays_done.set()

            *floods, answered = await asyncio.gather(*(flood() for _ in range(4)), relays())
    assert all(status == 200 for statuses in floods for status in statuses)  # 200 + success: false
    assert answered == [200] * 30
    await admin.close()


# -- lockouts (issue 26, H3) ---------------------------------------------------------------
def _lock_step(resp: httpx.Response) -> str:
    """The answer of every password login past the account's lock: the second step, right
    password or wrong; its flow token."""
    body = resp.json()
    assert resp.status_code == 200 and body["success"] is True, resp.text
    assert set(body["data"]) == {"require_2fa", "flow_token", "expires_at"} and body["data"]["require_2fa"] is True
    assert body["message"].startswith(LOCKED_STEP.split("{", 1)[0])
    return str(body["data"]["flow_token"])


async def _second_step(http: httpx.AsyncClient, token: str, code: str, address: str) -> dict[str, Any]:
    resp = await http.post("/api/user/login/2fa", json={"code": code, "flow_token": token},
                           headers={"X-Forwarded-For": address})
    answer: dict[str, Any] = resp.json()
    return answer


async def _lock(http: httpx.AsyncClient, username: str, addresses: int, per_address: int, base_url: str = "",
                prefix: str = "198.51.100") -> None:
    """Guessers at ``addresses`` addresses, each until it is refused."""
    for i in range(addresses):
        for _ in range(per_address):
            wrong = await _login(http, username, "a-wrong-guess", base_url, address=f"{prefix}.{i + 1}")
            assert wrong.json() == {"success": False, "message": WRONG}, wrong.text
        _assert_throttled(await _login(http, username, "a-wrong-guess", base_url, address=f"{prefix}.{i + 1}"))


async def test_others_failures_do_not_stop_the_owner_from_a_fresh_address(make_gateway: Any) -> None:
    """The issue's case, with the default limits: ten wrong passwords (and more) from other
    addresses; each of them is locked out, root from its own fresh address is not."""
    gw, admin = await _gateway(make_gateway, trusted_proxies=("127.0.0.1",))
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        await _lock(http, "root", addresses=6, per_address=10)  # 60 failures, 6 addresses each locked out
        # a locked-out address is refused the right password too, before it is checked
        _assert_throttled(await _login(http, "root", ROOT_PASSWORD, address="198.51.100.1"))
    async with httpx.AsyncClient(base_url=gw.base_url) as owner:  # a new browser at a new address
        answer = await _login(owner, "root", ROOT_PASSWORD, address="203.0.113.50")
        assert answer.json()["success"] is True and answer.json()["data"]["username"] == "root"
        assert (await owner.get("/api/user/self", headers={"New-Api-User": str(admin.user_id)})).json()["success"]
    await admin.close()


async def test_guessing_from_many_addresses_stays_bounded_and_tells_nothing(make_gateway: Any) -> None:
    """Past the account's lock a fresh address gets the second step whatever it sends: the
    right password and a wrong one get the same answer, neither gets a session, and the
    step fails alike for both (root has no second factor here)."""
    gw, admin = await _gateway(make_gateway, trusted_proxies=("127.0.0.1",), login_max_failures_per_account=2,
                               login_max_failures_per_ip=1000, login_account_lock_failures=6)
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        await _lock(http, "root", addresses=3, per_address=2)  # 6 failures: the lock
    checks = []
    for n, password in enumerate((ROOT_PASSWORD, "a-wrong-guess", ROOT_PASSWORD)):
        address = f"203.0.113.{n + 1}"
        async with httpx.AsyncClient(base_url=gw.base_url) as client:
            token = _lock_step(await _login(client, "root", password, address=address))
            assert (await client.get("/api/user/self", headers={"New-Api-User": "1"})).status_code == 401
            checks.append(await _second_step(client, token, "123456", address))
    assert checks[0] == checks[1] == checks[2] and checks[0]["success"] is False
    # an unknown name under its own lock answers alike: no oracle for names either
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        await _lock(http, "nobody-here", addresses=3, per_address=2)
        _lock_step(await _login(http, "nobody-here", "anything", address="203.0.113.9"))
        # a guesser who passed the lock still counts per address: its address is refused at its limit
        for _ in range(2):
            _lock_step(await _login(http, "root", "guess", address="203.0.113.77"))
        _assert_throttled(await _login(http, "root", ROOT_PASSWORD, address="203.0.113.77"))
    await admin.close()


async def test_a_known_browser_signs_in_during_a_lock(make_gateway: Any) -> None:
    """A browser that signed in to the account before keeps signing in with the password
    (OWASP's device cookie), within a failure budget of its own; a forged cookie or another
    user's is not one."""
    gw, admin = await _gateway(make_gateway, trusted_proxies=("127.0.0.1",), login_max_failures_per_account=2,
                               login_max_failures_per_ip=1000, login_account_lock_failures=4)
    await admin.ok("POST", "/api/user/", json={"username": "alice", "password": "alice-password-1"})
    async with httpx.AsyncClient(base_url=gw.base_url) as laptop, httpx.AsyncClient(base_url=gw.base_url) as other:
        assert (await _login(laptop, "root", ROOT_PASSWORD, address="203.0.113.5")).json()["success"] is True
        assert laptop.cookies.get(DEVICE_COOKIE)
        assert (await _login(other, "alice", "alice-password-1", address="203.0.113.6")).json()["success"] is True
        async with httpx.AsyncClient(base_url=gw.base_url) as http:
            await _lock(http, "root", addresses=2, per_address=2)
        # from a new address even: the browser is what is known
        answer = await _login(laptop, "root", ROOT_PASSWORD, address="192.0.2.80")
        assert answer.json()["success"] is True and answer.json()["data"]["username"] == "root"
        _lock_step(await _login(other, "root", ROOT_PASSWORD, address="192.0.2.81"))  # alice's browser
        forged = {DEVICE_COOKIE: laptop.cookies[DEVICE_COOKIE][:-3] + "AAA"}
        async with httpx.AsyncClient(base_url=gw.base_url, cookies=forged) as stranger:
            _lock_step(await _login(stranger, "root", ROOT_PASSWORD, address="192.0.2.82"))
        # the known browser's own failures are bounded: two, then the lock applies to it too
        for n in range(2):
            wrong = await _login(laptop, "root", "a-wrong-guess", address=f"192.0.2.{90 + n}")
            assert wrong.json() == {"success": False, "message": WRONG}
        _lock_step(await _login(laptop, "root", ROOT_PASSWORD, address="192.0.2.99"))
    await admin.close()


async def test_a_second_factor_signs_in_during_a_lock(make_gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root with TOTP, from a fresh browser while locked: the right password and the code get
    in. A wrong password's step fails as a wrong code does, with the right code too, and
    never reaches the factor (its code stays unused, its own lockout uncounted)."""
    clock = {"now": 1_800_000_000.0}
    monkeypatch.setattr(totp_factor, "now", lambda: clock["now"])
    gw, admin = await _gateway(make_gateway, trusted_proxies=("127.0.0.1",), login_max_failures_per_account=2,
                               login_max_failures_per_ip=1000, login_account_lock_failures=4)
    setup = await admin.ok("POST", "/api/user/2fa/setup")
    totp = pyotp.TOTP(setup["secret"])
    await admin.ok("POST", "/api/user/2fa/enable", json={"code": totp.at(clock["now"])})
    clock["now"] += 30
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        await _lock(http, "root", addresses=2, per_address=2)
    code = totp.at(clock["now"])
    async with httpx.AsyncClient(base_url=gw.base_url) as attacker:
        for n in range(6):  # more than the factor's own lockout (five) would take
            token = _lock_step(await _login(attacker, "root", f"guess-{n}", address=f"192.0.2.{n + 1}"))
            refused = await _second_step(attacker, token, code, f"192.0.2.{n + 1}")
            assert refused == {"success": False, "message": "the code is wrong: check your authenticator or use "
                                                            "a backup code"}
    assert (await admin.ok("GET", "/api/user/2fa/status"))["locked"] is False
    async with httpx.AsyncClient(base_url=gw.base_url) as owner:
        token = _lock_step(await _login(owner, "root", ROOT_PASSWORD, address="203.0.113.60"))
        done = await _second_step(owner, token, code, "203.0.113.60")  # the code the attacker held: unused
        assert done["success"] is True and done["data"]["username"] == "root"
    await admin.close()


# -- the throttle itself ------------------------------------------------------------------
async def test_an_address_is_locked_out_of_an_account_and_the_account_past_its_total() -> None:
    throttle = LoginThrottle(MemoryCounters(), window=60, per_account=3, per_ip=100, account_lock=8)
    for _ in range(3):
        assert await throttle.attempt("10.0.0.1", "Root") is None
    refusal = await throttle.attempt("10.0.0.1", "root ")  # names are compared as casefolded
    assert refusal is not None and not refusal.account_locked and 1 <= refusal.wait <= 60
    assert await throttle.attempt("10.0.0.1", "alice") is None  # per account
    for _ in range(20):  # hammering on: a refused address does not push the account to its lock
        hammered = await throttle.attempt("10.0.0.1", "root")
        assert hammered is not None and not hammered.account_locked
    for i in range(2, 7):  # other addresses are not refused, until the failures of all pass the total (8)
        assert await throttle.attempt(f"10.0.0.{i}", "root") is None
    locked = await throttle.attempt("10.0.0.50", "root")
    assert locked is not None and locked.account_locked
    assert await throttle.attempt("10.0.0.51", "root", account_wide=False) is None  # a step that skips the total
    await throttle.unlock(["ROOT"])  # both locks: the account's and each address's on it
    assert await throttle.attempt("10.0.0.1", "root") is None
    assert await throttle.attempt("10.0.0.52", "root") is None


async def test_an_ipv6_client_is_counted_by_its_64() -> None:
    throttle = LoginThrottle(MemoryCounters(), window=60, per_account=2, per_ip=100)
    assert await throttle.attempt("2001:db8:1:2::1", "root") is None
    assert await throttle.attempt("2001:db8:1:2:ffff::9", "root") is None
    assert await throttle.attempt("2001:db8:1:2:abcd::", "root") is not None  # the same /64
    assert await throttle.attempt("2001:db8:1:3::1", "root") is None
    assert LoginThrottle.client_key("::ffff:192.0.2.1") == "192.0.2.1"


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


def _unlock(env: dict[str, str], username: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "faregate.cli", "admin", "unlock", username], env=env,
                          capture_output=True, text=True, timeout=120)


async def _signs_in_soon(base_url: str, username: str, prefix: str) -> None:
    """The owner from fresh addresses, until a login succeeds (the unlock reaches a worker
    through its change feed: a poll, not a promise of timing)."""
    deadline = time.monotonic() + 60
    for n in range(1, 10_000):
        async with httpx.AsyncClient(base_url=base_url) as owner:
            answer = (await _login(owner, username, ROOT_PASSWORD, address=f"{prefix}.{n % 250 + 1}")).json()
        if answer["success"] and "username" in answer["data"]:
            return
        assert time.monotonic() < deadline, answer
        await asyncio.sleep(0.2)


async def test_faregate_admin_unlock_lifts_a_lock(tmp_path: Any) -> None:
    """Without Redis every worker counts apart: the command tells them through the change feed."""
    env = {"FAREGATE_TRUSTED_PROXIES": "127.0.0.1", "FAREGATE_LOGIN_MAX_FAILURES_PER_ACCOUNT": "2",
           "FAREGATE_LOGIN_ACCOUNT_LOCK_FAILURES": "4", "FAREGATE_REDIS_URL": ""}
    node = GatewayProcess(str(tmp_path / "gw"), env=env)
    try:
        await asyncio.to_thread(node.start)
        admin = AdminClient(node.base_url)
        await admin.setup_root()
        async with httpx.AsyncClient(base_url=node.base_url) as http:
            await _lock(http, "root", addresses=2, per_address=2)
            _lock_step(await _login(http, "root", ROOT_PASSWORD, address="203.0.113.1"))
        unlocked = await asyncio.to_thread(_unlock, node.env, "root")
        assert unlocked.returncode == 0 and "login lock of 'root' lifted" in unlocked.stdout, unlocked.stderr
        await _signs_in_soon(node.base_url, "root", "192.0.2")
        missing = await asyncio.to_thread(_unlock, node.env, "nobody")
        assert missing.returncode == 1 and "no user named 'nobody'" in missing.stderr
        await admin.close()
    finally:
        node.stop()


async def test_nodes_share_a_lock_and_its_unlock(tmp_path: Any, redis_url: str) -> None:
    """Two nodes (processes) sharing Redis: failures spread over them lock the account on
    both, the owner's fresh address gets the lock's step on either, and one command lifts it
    on both at once."""
    name = f"r{uuid.uuid4().hex[:12]}"  # the counters live in a Redis other runs share
    prefix = f"10.{secrets.randbelow(256)}.{secrets.randbelow(256)}"
    env = {"FAREGATE_REDIS_URL": redis_url, "FAREGATE_TRUSTED_PROXIES": "127.0.0.1",
           "FAREGATE_LOGIN_MAX_FAILURES_PER_ACCOUNT": "2", "FAREGATE_LOGIN_ACCOUNT_LOCK_FAILURES": "4"}
    nodes = [GatewayProcess(str(tmp_path / node), env=env) for node in ("a", "b")]
    try:
        await asyncio.gather(*(asyncio.to_thread(node.start) for node in nodes))
        for node in nodes:  # a database each: the same root on both
            admin = AdminClient(node.base_url)
            await admin.setup_root(username=name)
            await admin.close()
        async with httpx.AsyncClient() as http:
            for i in range(4):
                wrong = await _login(http, name, "a-wrong-guess", nodes[i % 2].base_url, address=f"{prefix}.{i + 1}")
                assert wrong.json() == {"success": False, "message": WRONG}
            for n, node in enumerate(nodes):
                _lock_step(await _login(http, name, ROOT_PASSWORD, node.base_url, address=f"{prefix}.{100 + n}"))
        unlocked = await asyncio.to_thread(_unlock, nodes[0].env, name)
        assert unlocked.returncode == 0 and "lifted on every node" in unlocked.stdout, unlocked.stderr
        for node in nodes:
            await _signs_in_soon(node.base_url, name, prefix)
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
