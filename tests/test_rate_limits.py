"""Rate limits (issue 29, item 1): new-api's model request rate limit per user on the relay
routes (``ModelRequestRateLimit*`` options, its 429 and messages) and its global per-IP limits
(``GLOBAL_API_RATE_LIMIT*``, ``GLOBAL_WEB_RATE_LIMIT*``), with new-api's defaults. Bad option
values: test_rate_limits_refused.py."""

from __future__ import annotations

from typing import Any

import httpx

from faregate.limits.store import GCRA, LEASE, LOG, RECORD, Check, MemoryStore, Update
from faregate.settings import CORE_SETTINGS, Settings
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

MODEL = "gpt-4o-mini"


async def _setup(server: GatewayServer, upstream: FakeOpenAI, **options: Any) -> tuple[AdminClient, str]:
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.add_channel(base_url=upstream.base_url, models=MODEL)
    for key, value in options.items():
        await admin.set_option(key, value)
    return admin, await admin.add_token(unlimited=True)


async def _ask(server: GatewayServer, key: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        return await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                               json={"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})


async def test_total_count_refuses_with_new_apis_429(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    _, key = await _setup(server, fake_openai, ModelRequestRateLimitEnabled="true",
                          ModelRequestRateLimitCount="2", ModelRequestRateLimitDurationMinutes="5")
    fake_openai.fail_next(400, "bad input")  # a failed request counts against the total
    assert (await _ask(server, key)).status_code == 400
    assert (await _ask(server, key)).status_code == 200
    refused = await _ask(server, key)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["type"] == "new_api_error"
    assert error["message"].startswith("您已达到总请求数限制：5分钟内最多请求2次")
    # GCRA: 2 per 5 minutes refills one request every 150 s
    assert 1 <= int(refused.headers["retry-after"]) <= 150
    assert refused.headers["x-ratelimit-limit-requests"] == "2"
    assert refused.headers["x-ratelimit-remaining-requests"] == "0"
    assert refused.headers["x-ratelimit-reset-requests"].endswith("s")
    assert "x-should-retry" not in refused.headers  # the SDKs retry a 429 after Retry-After


async def test_success_count_counts_successes_only(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    _, key = await _setup(server, fake_openai, ModelRequestRateLimitEnabled="true",
                          ModelRequestRateLimitSuccessCount="2")
    for _ in range(3):
        fake_openai.fail_next(400, "bad input")
        assert (await _ask(server, key)).status_code == 400
    assert (await _ask(server, key)).status_code == 200
    assert (await _ask(server, key)).status_code == 200
    refused = await _ask(server, key)
    assert refused.status_code == 429
    assert refused.json()["error"]["message"].startswith("您已达到请求数限制：1分钟内最多请求2次")


async def test_group_pair_overrides(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    _, key = await _setup(server, fake_openai, ModelRequestRateLimitEnabled="true",
                          ModelRequestRateLimitCount="100",
                          ModelRequestRateLimitGroup={"default": [1, 5], "vip": [0, 9]})
    assert (await _ask(server, key)).status_code == 200
    assert (await _ask(server, key)).status_code == 429


async def test_the_playground_is_not_limited(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    """As in new-api, whose limit is on its /v1 and Gemini routes, not /pg."""
    server = await make_gateway()
    admin, key = await _setup(server, fake_openai, ModelRequestRateLimitEnabled="true",
                              ModelRequestRateLimitCount="1")
    assert (await _ask(server, key)).status_code == 200
    assert (await _ask(server, key)).status_code == 429
    for _ in range(2):
        resp = await admin.http.post("/pg/chat/completions", headers={"New-Api-User": str(admin.user_id)},
                                     json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
        assert resp.status_code == 200, resp.text


async def test_off_by_default_and_no_store_call(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway()
    _, key = await _setup(server, fake_openai)

    async def no_call(*args: Any) -> Any:
        raise AssertionError("the store was called for a caller no limit applies to")

    server.gateway.limiter.store.admit = no_call  # type: ignore[method-assign]
    for _ in range(3):
        assert (await _ask(server, key)).status_code == 200


def test_new_apis_global_defaults() -> None:
    settings = Settings(CORE_SETTINGS, environ={})
    assert (settings.global_api_rate_limit_enable, settings.global_api_rate_limit,
            settings.global_api_rate_limit_duration) == (True, 180, 180)
    assert (settings.global_web_rate_limit_enable, settings.global_web_rate_limit,
            settings.global_web_rate_limit_duration) == (True, 60, 180)
    named = Settings(CORE_SETTINGS, environ={"GLOBAL_API_RATE_LIMIT": "7", "GLOBAL_WEB_RATE_LIMIT_ENABLE": "false"})
    assert named.global_api_rate_limit == 7 and named.global_web_rate_limit_enable is False


async def test_global_api_limit_per_ip(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    server = await make_gateway(settings={"global_api_rate_limit_enable": True, "global_api_rate_limit": 30})
    admin, key = await _setup(server, fake_openai)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        answers = [(await http.get("/api/status")).status_code for _ in range(30)]
        assert answers[-1] == 429 and 200 in answers
        refused = await http.get("/api/status")
        assert refused.status_code == 429 and refused.json()["success"] is False
        assert int(refused.headers["retry-after"]) >= 1
    assert (await _ask(server, key)).status_code == 200  # the relay is not under the API's limit


async def test_global_web_limit_counts_pages(make_gateway: Any) -> None:
    server = await make_gateway(settings={"global_web_rate_limit_enable": True, "global_web_rate_limit": 2})
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        assert [(await http.get("/login")).status_code for _ in range(3)] == [200, 200, 429]
        assert (await http.get("/healthz")).status_code == 200


# ---- the memory store's algorithms, on a clock the test moves ------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def test_gcra_refills_smoothly() -> None:
    clock = Clock()
    store = MemoryStore(clock)
    check = [Check("k", GCRA, 3, 60_000)]
    assert [store.decide(check, "r").admitted for _ in range(4)] == [True, True, True, False]
    refused = store.decide(check, "r")
    assert refused.wait_ms == 20_000
    clock.now += 20_000
    assert store.decide(check, "r").admitted
    assert not store.decide(check, "r").admitted


def test_sliding_log_checks_then_records() -> None:
    clock = Clock()
    store = MemoryStore(clock)
    check = Check("s", LOG, 2, 60_000)
    for _ in range(5):
        assert store.decide([check], "r").admitted  # checked, not counted
    store.apply([Update("s", RECORD, 2, 60_000)])
    clock.now += 10_000
    store.apply([Update("s", RECORD, 2, 60_000)])
    refused = store.decide([check], "r")
    assert not refused.admitted and refused.wait_ms == 50_000
    clock.now += 50_000
    assert store.decide([check], "r").admitted


def test_one_refusal_counts_nothing() -> None:
    store = MemoryStore(Clock())
    checks = [Check("a", GCRA, 5, 60_000), Check("b", GCRA, 1, 60_000)]
    assert store.decide(checks, "r").admitted
    for _ in range(3):
        assert store.decide(checks, "r").refused == 1
    assert store.decide([checks[0]], "r").remaining == [4]  # a's 3 refusals were not counted


def test_leases_lapse() -> None:
    clock = Clock()
    store = MemoryStore(clock)
    check = [Check("p", LEASE, 1, 60_000)]
    assert store.decide(check, "one").admitted
    assert not store.decide(check, "two").admitted
    clock.now += 60_000  # a worker that died holding it: the lease lapses
    assert store.decide(check, "three").admitted
