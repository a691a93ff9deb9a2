"""Routing that heals (issue 15): a failing channel, or one key of a multi-key channel,
cools down for an exponentially growing time and gets one half-open trial afterwards,
instead of new-api's permanent auto-disable; a 429 rotates the key; the time a request
spends on attempts is capped; a dead key (401) is still disabled when the option says so."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import openai
import pytest
import pytest_asyncio

from faregate import jsonutil
from faregate.db import models as m
from faregate.default_plugins.options import core_options
from faregate.errors import GatewayError
from faregate.exchange import breaker
from faregate.exchange.breaker import CHANNEL, Breakers
from faregate.exchange.options import DISABLE_CODES, DISABLE_TYPES
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs
from faregate_adapter_openai.testing import FakeOpenAI, Fault

MODEL = "gpt-4o-mini"
MSGS = [{"role": "user", "content": "hello there"}]
BASE = 1.0  # seconds: short cooldowns keep the tests fast, long enough for a busy machine


@dataclass
class Pair:
    server: GatewayServer
    admin: AdminClient
    client: openai.AsyncOpenAI
    a: FakeOpenAI
    b: FakeOpenAI
    id_a: int
    id_b: int


@pytest_asyncio.fixture
async def pair(gateway: GatewayServer, admin: AdminClient) -> AsyncIterator[Pair]:
    """Channel A (tried first) and B; one retry; cooldowns from 1 s."""
    async with FakeOpenAI() as a, FakeOpenAI() as b:
        id_a = await admin.add_channel(base_url=a.base_url, models=MODEL, name="A", priority=10)
        id_b = await admin.add_channel(base_url=b.base_url, models=MODEL, name="B", priority=0)
        for key, value in (("RetryTimes", "1"), ("ChannelCooldownBaseSeconds", str(BASE)),
                           ("ChannelCooldownMaxSeconds", "5")):
            await admin.set_option(key, value)
        client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(),
                                    max_retries=0)
        yield Pair(gateway, admin, client, a, b, id_a, id_b)
        await client.close()


async def ask(client: openai.AsyncOpenAI) -> str:
    reply = await client.chat.completions.create(model=MODEL, messages=MSGS)
    return reply.choices[0].message.content or ""


def cooldown_left(server: GatewayServer, channel_id: int, key: str = CHANNEL) -> float:
    state = server.gateway.breakers.states.get((channel_id, key))
    return 0.0 if state is None else state.open_until - time.monotonic()


@pytest.mark.parametrize("fault", [Fault("status", status=500), Fault("reset"), Fault("status", status=429),
                                   Fault("malformed_json")], ids=["500", "reset", "429", "broken-200"])
async def test_a_failing_channel_is_skipped_then_tried_once_and_recovers(pair: Pair, fault: Fault,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "faregate.relay")
    pair.a.push_fault(fault)
    assert await ask(pair.client)  # A failed, B answered
    assert (len(pair.a.requests), len(pair.b.requests)) == (1, 1)
    assert 0 < cooldown_left(pair.server, pair.id_a) <= BASE
    assert await ask(pair.client)  # A cools down: B answers without A being asked
    assert (len(pair.a.requests), len(pair.b.requests)) == (1, 2)
    await asyncio.sleep(BASE + 0.05)
    assert await ask(pair.client)  # the cooldown is over: A gets its trial, and answers
    assert (len(pair.a.requests), len(pair.b.requests)) == (2, 2)
    assert pair.server.gateway.breakers.states == {}  # closed again
    assert f"channel {pair.id_a} recovered after 1 failure(s) in a row" in caplog.text
    rows = await consume_logs(pair.server)
    assert [r.channel_id for r in rows][-1] == pair.id_a


async def test_the_cooldown_doubles_while_the_trials_fail(pair: Pair, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "faregate.relay")
    pair.a.push_fault(Fault("status", status=502))
    await ask(pair.client)
    assert f"channel {pair.id_a} cools down for 1.0 s (failure 1 in a row)" in caplog.text
    await asyncio.sleep(BASE + 0.05)
    pair.a.push_fault(Fault("status", status=503))
    await ask(pair.client)  # the half-open trial fails: twice as long now
    assert f"channel {pair.id_a} cools down for 2.0 s (failure 2 in a row)" in caplog.text
    assert BASE < cooldown_left(pair.server, pair.id_a) <= BASE * 2
    assert pair.server.gateway.breakers.states[(pair.id_a, CHANNEL)].trips == 2
    assert len(pair.a.requests) == 2 and len(pair.b.requests) == 2
    metrics = (await pair.admin.http.get("/metrics")).text
    assert f'faregate_channel_trips_total{{channel="{pair.id_a}",scope="channel"}} 2.0' in metrics
    assert "faregate_channels_cooling 1.0" in metrics


async def test_when_every_channel_cools_down_the_first_to_end_is_tried(pair: Pair) -> None:
    pair.a.push_fault(Fault("status", status=500))
    pair.b.push_fault(Fault("status", status=500))
    with pytest.raises(openai.InternalServerError):
        await ask(pair.client)
    assert cooldown_left(pair.server, pair.id_a) < cooldown_left(pair.server, pair.id_b)
    # both cool down: not refused, A (whose cooldown ends first) gets a trial and answers
    assert await ask(pair.client)
    assert (len(pair.a.requests), len(pair.b.requests)) == (2, 1)
    assert (pair.id_a, CHANNEL) not in pair.server.gateway.breakers.states


async def test_a_disabled_cooldown_never_skips(pair: Pair) -> None:
    await pair.admin.set_option("ChannelCooldownBaseSeconds", "0")
    pair.a.push_fault(Fault("status", status=500))
    await ask(pair.client)
    await ask(pair.client)
    assert (len(pair.a.requests), len(pair.b.requests)) == (2, 1)


async def test_the_time_spent_on_attempts_is_capped(pair: Pair, admin: AdminClient) -> None:
    async with FakeOpenAI() as c:
        await admin.add_channel(base_url=c.base_url, models=MODEL, name="C", priority=-10)
        await admin.set_option("RetryTimes", "3")
        await admin.set_option("RetryTimeLimitSeconds", "1")
        # A fails at once, B takes its time: the retry on B is cut at the cap, C is never asked
        pair.a.push_fault(Fault("status", status=500))
        pair.b.push_fault(Fault("slow_first_byte", delay=3))
        started = time.monotonic()
        with pytest.raises(openai.InternalServerError):
            await ask(pair.client)
        assert time.monotonic() - started < 2.5
        assert len(pair.b.requests) == 1 and c.requests == []
        # a cut retry is not the channel's fault: B does not cool down for it
        assert (pair.id_b, CHANNEL) not in pair.server.gateway.breakers.states
        # the first attempt is never cut: A slow but past the cap, then no further channel
        await asyncio.sleep(BASE + 0.05)
        pair.a.push_fault(Fault("slow_first_byte", delay=1.3))
        assert await ask(pair.client)
        assert len(pair.b.requests) == 1 and c.requests == []


async def test_a_401_still_disables_the_channel_when_the_option_says_so(pair: Pair) -> None:
    pair.a.fail_next(401, "Incorrect API key provided")
    assert await ask(pair.client)  # B answers
    for _ in range(50):
        if (await m.Channel.get(id=pair.id_a)).status == m.CHANNEL_AUTO_DISABLED:
            break
        await asyncio.sleep(0.05)
    assert (await m.Channel.get(id=pair.id_a)).status == m.CHANNEL_AUTO_DISABLED
    await asyncio.sleep(BASE + 0.05)
    assert await ask(pair.client)
    assert len(pair.a.requests) == 1  # disabled for good: no trial


async def test_without_auto_disable_a_401_cools_the_channel_down(pair: Pair) -> None:
    await pair.admin.set_option("AutomaticDisableChannelEnabled", "false")
    pair.a.fail_next(401, "Incorrect API key provided")
    assert await ask(pair.client)
    assert (await m.Channel.get(id=pair.id_a)).status == m.CHANNEL_ENABLED
    assert cooldown_left(pair.server, pair.id_a) > 0
    await ask(pair.client)
    assert len(pair.a.requests) == 1


@pytest.mark.parametrize(("codes", "status"), [("401,403", 403), ("401-403", 402), ("400,500-503,429", 502)])
async def test_a_status_in_the_disable_list_or_a_range_disables_the_channel(pair: Pair, codes: str,
                                                                             status: int) -> None:
    """``AutomaticDisableStatusCodes`` takes statuses and ranges: each status of a range
    disables (only the range's first did)."""
    await pair.admin.set_option("AutomaticDisableStatusCodes", codes)
    await pair.admin.set_option("AutomaticRetryStatusCodes", "400-599")
    pair.a.fail_next(status, "something went wrong upstream")
    assert await ask(pair.client)  # B answers
    for _ in range(50):
        if (await m.Channel.get(id=pair.id_a)).status == m.CHANNEL_AUTO_DISABLED:
            break
        await asyncio.sleep(0.05)
    assert (await m.Channel.get(id=pair.id_a)).status == m.CHANNEL_AUTO_DISABLED


def test_disable_statuses_outside_the_ranges_do_not_disable() -> None:
    options = core_options({"AutomaticDisableStatusCodes": "401-403,429", "AutomaticDisableKeywords": ""})
    disabling = [s for s in (400, 401, 402, 403, 404, 428, 429, 430, 500)
                 if options.should_disable(s, GatewayError(s, "boom", type="upstream_error"))]
    assert disabling == [401, 402, 403, 429]


def test_the_breaker_names_every_rule_that_disables() -> None:
    """Its docstring says what disables rather than cools down: every code and type of the rules."""
    doc = " ".join((breaker.__doc__ or "").split())
    for name in (*DISABLE_CODES, *DISABLE_TYPES, "AutomaticDisableStatusCodes", "AutomaticDisableKeywords"):
        assert name in doc, name


async def test_a_request_never_tries_a_channel_twice(pair: Pair) -> None:
    """More retries than channels, every one failing, no cooldown to keep a channel away:
    each channel is asked once, then the request fails."""
    await pair.admin.set_option("RetryTimes", "5")
    await pair.admin.set_option("ChannelCooldownBaseSeconds", "0")
    for fake in (pair.a, pair.b):
        for _ in range(6):
            fake.push_fault(Fault("status", status=500))
    with pytest.raises(openai.InternalServerError):
        await ask(pair.client)
    assert (len(pair.a.requests), len(pair.b.requests)) == (1, 1)


# -- the channel's status-code mapping (new-api's status_code_mapping) -------------------------
async def test_a_mapped_status_reaches_the_client_and_is_not_retried(pair: Pair) -> None:
    """A's 500 mapped to 400: the client sees the 400, and (as new-api, whose retry reads the
    mapped status) B is not tried: 400 is never retried."""
    await pair.admin.call("PUT", "/api/channel/", json={"id": pair.id_a, "status_code_mapping": '{"500": "400"}'})
    pair.a.fail_next(500, "upstream broke")
    with pytest.raises(openai.BadRequestError) as refused:
        await ask(pair.client)
    assert refused.value.status_code == 400
    assert pair.b.requests == []


async def test_a_status_mapped_to_a_retried_one_moves_on(pair: Pair) -> None:
    """A's 400 (never retried) mapped to 503 (retried, as a number): B answers; a value that
    is no HTTP status maps nothing."""
    await pair.admin.call("PUT", "/api/channel/", json={"id": pair.id_a,
                                                       "status_code_mapping": '{"400": 503, "504": "999"}'})
    pair.a.fail_next(400, "bad request upstream")
    assert await ask(pair.client)
    assert (len(pair.a.requests), len(pair.b.requests)) == (1, 1)
    await asyncio.sleep(BASE + 0.05)  # A's cooldown for the 503 ends
    pair.a.fail_next(504, "timed out upstream")
    with pytest.raises(openai.InternalServerError) as failed:
        await ask(pair.client)
    assert failed.value.status_code == 504 and len(pair.b.requests) == 1  # 504 is not retried


# -- multi-key channels --------------------------------------------------------------------
GOOD, BAD = "sk-good-key-0123456789", "sk-dead-key-0123456789"


async def multi_key_channel(admin: AdminClient, fake: FakeOpenAI, keys: list[str]) -> int:
    channel_id: int = await admin.ok("POST", "/api/channel/", json={
        "mode": "multi_to_single", "multi_key_mode": "polling",
        "channel": {"type": 1, "name": "multi", "key": "\n".join(keys), "base_url": fake.base_url, "models": MODEL}})
    return channel_id


def key_of(request: dict[str, object]) -> str:
    headers = request["headers"]
    assert isinstance(headers, dict)
    return str(headers["authorization"]).removeprefix("Bearer ")


async def test_a_429_rotates_to_another_key_of_the_channel(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.set_option("ChannelCooldownBaseSeconds", str(BASE))
    async with FakeOpenAI() as fake:
        cid = await multi_key_channel(admin, fake, [GOOD, BAD])
        client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(),
                                    max_retries=0)
        fake.push_fault(Fault("status", status=429, retry_after="0"))
        assert await ask(client)  # RetryTimes is 0: the other key answered within the same channel
        limited, answered = (key_of(r) for r in fake.requests)
        assert limited != answered
        assert cooldown_left(gateway, cid, limited) > 0 and cooldown_left(gateway, cid) == 0
        assert await ask(client)  # the limited key cools down: the other one is used
        assert key_of(fake.requests[-1]) == answered
        rows = await consume_logs(gateway)
        assert jsonutil.loads(rows[0].other)["admin_info"]["use_channel"] == [cid]  # one channel, two keys
        await client.close()


async def test_a_dead_key_is_disabled_on_its_own(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeOpenAI(api_key=GOOD) as fake:  # refuses every other key with a 401
        cid = await multi_key_channel(admin, fake, [BAD, GOOD])
        client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(),
                                    max_retries=0)
        for _ in range(3):
            assert await ask(client)  # every request answered: the dead key is replaced within it
        assert [key_of(r) for r in fake.requests].count(BAD) == 1
        for _ in range(50):
            info = jsonutil.loads((await m.Channel.get(id=cid)).channel_info)
            if info.get("multi_key_status_list"):
                break
            await asyncio.sleep(0.05)
        row = await m.Channel.get(id=cid)
        assert row.status == m.CHANNEL_ENABLED
        assert jsonutil.loads(row.channel_info)["multi_key_status_list"] == {"0": 3}
        status = await admin.ok("POST", "/api/channel/multi_key/manage",
                                json={"channel_id": cid, "action": "get_key_status"})
        assert status["auto_disabled_count"] == 1 and "401" in status["keys"][0]["reason"]
        await client.close()


# -- the breaker itself -----------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_cooldowns_double_up_to_the_cap_and_respect_retry_after() -> None:
    clock = Clock()
    breakers = Breakers(clock, trial_window=1.0)
    seen = [breakers.trip(7, CHANNEL, "x", base=1, cap=5) for _ in range(5)]
    assert seen == [1, 2, 4, 5, 5]
    breakers.success(7, "")
    assert breakers.states == {}
    assert breakers.trip(7, CHANNEL, "x", base=1, cap=5, retry_after=3) == 3  # the upstream said 3 s
    assert breakers.trip(8, CHANNEL, "x", base=1, cap=5, retry_after=60) == 5  # but never past the cap


def test_a_half_open_channel_takes_one_trial_at_a_time() -> None:
    from faregate.state.snapshot import ChannelEntry

    clock = Clock()
    breakers = Breakers(clock, trial_window=10.0)
    channel = ChannelEntry(id=3, type=1, name="c", keys=["k"], base_url="", status=1, weight=0, priority=0,
                           models=[], groups=[], model_mapping={}, status_code_mapping={}, auto_ban=True, other="",
                           setting={}, header_override={}, param_override={})
    breakers.trip(3, CHANNEL, "x", base=2, cap=60)
    assert breakers.channel_blocked(channel, clock.now) == 102.0
    clock.now = 102.5
    assert breakers.channel_blocked(channel, clock.now) == 0  # half-open
    breakers.begin(3, "k")  # one request takes the trial …
    assert breakers.channel_blocked(channel, clock.now) == 112.5  # … the others wait for its result
    breakers.trip(3, CHANNEL, "x", base=2, cap=60)  # it failed: twice as long
    assert breakers.channel_blocked(channel, clock.now) == 106.5
    assert breakers.cooling_count() == 1
