"""new-api's channel monitor (``monitor_setting.auto_test_channel_*``,
``AutomaticEnableChannelEnabled``, ``ChannelDisableThreshold``; issue 28 item 4): a round tests
every channel not disabled by hand, disables (status 3) a failing one by the relay's rules,
enables again an automatically disabled one whose test passes, and runs once per period for
the whole cluster, whatever the number of workers polling."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import openai
import pytest

from faregate import channel_monitor, jsonutil
from faregate.accounts.notify import Notification, NotifyTarget
from faregate.db import models as m
from faregate.state import multi_keys
from faregate.state.snapshot import KEY_AUTO_DISABLED
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

GPT = "gpt-4o-mini"
PERIOD = channel_monitor.period_seconds(10)


@pytest.fixture
async def fake_b() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
async def channels(gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI,
                   fake_b: FakeOpenAI) -> dict[str, int]:
    ids = {"a": await admin.add_channel(base_url=fake_openai.base_url, models=GPT, name="a"),
           "b": await admin.add_channel(base_url=fake_b.base_url, models=GPT, name="b")}
    await admin.set_option(channel_monitor.ENABLED, True)
    await admin.set_option("AutomaticEnableChannelEnabled", True)
    # new-api's 5 s: a healthy channel's test took longer on a machine at load 16 (and was
    # disabled); the threshold has a test of its own
    await admin.set_option("ChannelDisableThreshold", "120")
    return ids


async def status(channel_id: int) -> int:
    return (await m.Channel.get(id=channel_id)).status


class Clock:
    """The rounds' times: each call one period after the last (no waiting)."""

    def __init__(self) -> None:
        self.now = time.time()

    def next(self) -> float:
        self.now += PERIOD
        return self.now


async def test_a_failing_channel_is_disabled_and_enabled_again_once_it_recovers(
        gateway: GatewayServer, admin: AdminClient, channels: dict[str, int], fake_openai: FakeOpenAI,
        fake_b: FakeOpenAI) -> None:
    gw, clock = gateway.gateway, Clock()
    fake_b.fail_next(401, "Incorrect API key provided")
    assert await channel_monitor.tick(gw, clock.next())
    assert await status(channels["a"]) == m.CHANNEL_ENABLED
    assert await status(channels["b"]) == m.CHANNEL_AUTO_DISABLED
    assert len(fake_openai.requests) == len(fake_b.requests) == 1
    # the relay stops routing to it: every request goes to a
    key = await admin.add_token(remain_quota=5_000_000)
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
    try:
        for _ in range(3):
            await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}])
    finally:
        await client.close()
    assert len(fake_b.requests) == 1
    # the next round: b answers again, and is enabled again (abilities too)
    assert await channel_monitor.tick(gw, clock.next())
    assert await status(channels["b"]) == m.CHANNEL_ENABLED
    assert await m.Ability.filter(channel_id=channels["b"], enabled=False).count() == 0


async def test_a_channel_disabled_by_hand_is_neither_tested_nor_enabled(
        gateway: GatewayServer, admin: AdminClient, channels: dict[str, int], fake_b: FakeOpenAI) -> None:
    await m.Channel.filter(id=channels["b"]).update(status=m.CHANNEL_MANUALLY_DISABLED)
    assert await channel_monitor.tick(gateway.gateway, Clock().next())
    assert fake_b.requests == []
    assert await status(channels["b"]) == m.CHANNEL_MANUALLY_DISABLED


async def test_without_automatic_enable_a_recovered_channel_stays_disabled(
        gateway: GatewayServer, admin: AdminClient, channels: dict[str, int], fake_b: FakeOpenAI) -> None:
    await admin.set_option("AutomaticEnableChannelEnabled", False)
    await m.Channel.filter(id=channels["b"]).update(status=m.CHANNEL_AUTO_DISABLED)
    assert await channel_monitor.tick(gateway.gateway, Clock().next())
    assert len(fake_b.requests) == 1  # tested all the same
    assert await status(channels["b"]) == m.CHANNEL_AUTO_DISABLED


@pytest.mark.parametrize("switch", ["option", "auto_ban"])
async def test_nothing_is_disabled_without_automatic_disable_or_auto_ban(
        gateway: GatewayServer, admin: AdminClient, channels: dict[str, int], fake_b: FakeOpenAI,
        switch: str) -> None:
    if switch == "option":
        await admin.set_option("AutomaticDisableChannelEnabled", False)
    else:
        await m.Channel.filter(id=channels["b"]).update(auto_ban=0)
    fake_b.fail_next(401, "Incorrect API key provided")
    assert await channel_monitor.tick(gateway.gateway, Clock().next())
    assert await status(channels["b"]) == m.CHANNEL_ENABLED


async def test_a_failure_the_relay_would_not_disable_for_leaves_the_channel_enabled(
        gateway: GatewayServer, channels: dict[str, int], fake_b: FakeOpenAI) -> None:
    fake_b.fail_next(500, "boom")  # not in AutomaticDisableStatusCodes
    assert await channel_monitor.tick(gateway.gateway, Clock().next())
    assert await status(channels["b"]) == m.CHANNEL_ENABLED


async def test_a_test_slower_than_the_threshold_disables_the_channel(
        gateway: GatewayServer, admin: AdminClient, channels: dict[str, int]) -> None:
    clock = Clock()
    await admin.set_option("ChannelDisableThreshold", "0.000001")  # every real test takes longer
    assert await channel_monitor.tick(gateway.gateway, clock.next())
    assert await status(channels["a"]) == await status(channels["b"]) == m.CHANNEL_AUTO_DISABLED
    # 0: no limit
    await admin.set_option("ChannelDisableThreshold", "0")
    await m.Channel.all().update(status=m.CHANNEL_ENABLED)
    await m.Ability.all().update(enabled=True)
    assert await channel_monitor.tick(gateway.gateway, clock.next())
    assert await status(channels["a"]) == m.CHANNEL_ENABLED


async def test_the_monitor_off_tests_nothing(gateway: GatewayServer, admin: AdminClient, channels: dict[str, int],
                                             fake_openai: FakeOpenAI) -> None:
    await admin.set_option(channel_monitor.ENABLED, False)
    assert not await channel_monitor.tick(gateway.gateway, Clock().next())
    assert fake_openai.requests == []


async def test_one_round_per_period_however_many_workers_poll(
        gateway: GatewayServer, channels: dict[str, int], fake_openai: FakeOpenAI, fake_b: FakeOpenAI) -> None:
    gw, clock = gateway.gateway, Clock()
    # every worker polls at once: the shared marker row lets exactly one run the round
    first = clock.next()
    ran = await asyncio.gather(*(channel_monitor.tick(gw, first + i) for i in range(4)))
    assert sum(ran) == 1
    assert len(fake_openai.requests) == len(fake_b.requests) == 1
    # later polls within the same period run nothing
    assert not await channel_monitor.tick(gw, first + PERIOD / 2)
    assert len(fake_openai.requests) == 1
    # the next period's round goes to whoever polls first
    ran = await asyncio.gather(*(channel_monitor.tick(gw, first + PERIOD + i) for i in range(3)))
    assert sum(ran) == 1 and len(fake_openai.requests) == 2


async def test_the_monitor_options_are_checked(admin: AdminClient) -> None:
    for key, value in ((channel_monitor.MINUTES, "0"), (channel_monitor.MINUTES, "x"),
                       ("ChannelDisableThreshold", "-1"), ("AutomaticEnableChannelEnabled", "maybe")):
        resp = await admin.call("PUT", "/api/option/", json={"key": key, "value": value})
        assert resp["success"] is False and key in resp["message"], (key, value)
    options = {o["key"]: o["value"] for o in await admin.ok("GET", "/api/option/")}
    assert options[channel_monitor.ENABLED] == "false" and options[channel_monitor.MINUTES] == "10"
    assert options["ChannelDisableThreshold"] == "5" and options["AutomaticEnableChannelEnabled"] == "false"


def test_the_period_is_rounded_to_whole_minutes_as_new_api_does() -> None:
    assert channel_monitor.period_seconds(10) == 600
    assert channel_monitor.period_seconds(1.4) == 60
    assert channel_monitor.period_seconds(2.6) == 180


async def test_every_worker_polls_from_its_start(make_gateway: object, fake_openai: FakeOpenAI) -> None:
    gw: GatewayServer = await make_gateway(settings={"job_lease_seconds": 0.3})  # type: ignore[operator]
    admin = AdminClient(gw.base_url)
    try:
        await admin.setup_root()
        await admin.add_channel(base_url=fake_openai.base_url, models=GPT)
        await admin.set_option(channel_monitor.ENABLED, True)
    finally:
        await admin.close()
    async with asyncio.timeout(30):  # the first poll after the option finds no round yet: it runs one
        while not fake_openai.requests:
            await asyncio.sleep(0.05)
    assert await m.Option.filter(key=channel_monitor.CLAIM_KEY).exists()


class Recorder:
    """A notifier of the webhook kind that keeps what it is given."""

    kind = "webhook"

    def __init__(self) -> None:
        self.sent: list[tuple[str, Notification]] = []

    async def send(self, target: NotifyTarget, note: Notification) -> None:
        self.sent.append((target.username, note))


async def test_the_root_is_told_once_when_a_channel_is_disabled_and_once_when_enabled(
        gateway: GatewayServer, admin: AdminClient, channels: dict[str, int], fake_b: FakeOpenAI) -> None:
    # new-api's NotifyRootUser: the way the root's own settings say, here its webhook
    gw, clock, recorder = gateway.gateway, Clock(), Recorder()
    gw.notifiers["webhook"] = recorder
    await m.User.filter(role=m.ROLE_ROOT).update(setting='{"notify_type": "webhook"}')

    async def told(count: int) -> list[tuple[str, Notification]]:
        for _ in range(200):  # the notice goes out in a background task
            if len(recorder.sent) >= count:
                break
            await asyncio.sleep(0.01)
        return recorder.sent

    fake_b.fail_next(401, "Incorrect API key provided")
    assert await channel_monitor.tick(gw, clock.next())
    [(whom, note)] = await told(1)
    assert whom == "root" and note.type == "channel_update"
    assert note.title == f"通道「b」（#{channels['b']}）已被禁用"
    assert note.text().startswith(note.title + "，原因：") and "Incorrect API key" in note.text()
    # a second disable of the same channel (the relay, another round) tells nobody again
    assert not await gw.disable_channel(channels["b"], "again")
    assert await channel_monitor.tick(gw, clock.next())  # b passes: enabled again, told once
    sent = await told(2)
    assert [note.title for _, note in sent] == [f"通道「b」（#{channels['b']}）已被禁用",
                                               f"通道「b」（#{channels['b']}）已被启用"]
    assert await channel_monitor.tick(gw, clock.next())  # nothing changes: nothing is told
    await asyncio.sleep(0.05)
    assert len(recorder.sent) == 2


GOOD, BAD, DEAD = "sk-good-key-0123456789", "sk-bad-key-0123456789", "sk-dead-key-0123456789"


async def multi_key_channel(admin: AdminClient, fake: FakeOpenAI, keys: list[str]) -> int:
    channel_id: int = await admin.ok("POST", "/api/channel/", json={
        "mode": "multi_to_single", "multi_key_mode": "polling",
        "channel": {"type": 1, "name": "multi", "key": "\n".join(keys), "base_url": fake.base_url, "models": GPT}})
    return channel_id


async def key_state(channel_id: int) -> tuple[int, dict[str, int]]:
    row = await m.Channel.get(id=channel_id)
    return row.status, jsonutil.loads(row.channel_info).get("multi_key_status_list") or {}


async def test_a_multi_key_channel_s_keys_are_disabled_and_enabled_one_by_one(
        gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.set_option(channel_monitor.ENABLED, True)
    await admin.set_option("AutomaticEnableChannelEnabled", True)
    gw, clock = gateway.gateway, Clock()
    async with FakeOpenAI(api_key=GOOD) as fake:  # refuses every other key with a 401
        mixed = await multi_key_channel(admin, fake, [BAD, GOOD])
        dead = await multi_key_channel(admin, fake, [BAD, DEAD])
        assert await channel_monitor.tick(gw, clock.next())
        # the failing key alone is out; the channel stays with its good key
        assert await key_state(mixed) == (m.CHANNEL_ENABLED, {"0": 3})
        # every key out: the channel too
        assert await key_state(dead) == (m.CHANNEL_AUTO_DISABLED, {"0": 3, "1": 3})
        assert await m.Ability.filter(channel_id=dead, enabled=True).count() == 0
        # a key that recovers is enabled again, and its channel with it
        row = await m.Channel.get(id=dead)
        keys = multi_keys.load_keys(gw.box.decrypt(row.key_enc, f"channel:{dead}"),
                                    multi_keys.read_info(row.channel_info))
        keys[1] = multi_keys.Key(GOOD, KEY_AUTO_DISABLED)  # DEAD replaced by a key that works
        key_enc = gw.box.encrypt("\n".join(k.text for k in keys), f"channel:{dead}")
        await m.Channel.filter(id=dead).update(key_enc=key_enc, channel_info=jsonutil.dumps_str(
            multi_keys.dump_info(multi_keys.read_info(row.channel_info), keys)))
        assert await channel_monitor.tick(gw, clock.next())
        assert await key_state(dead) == (m.CHANNEL_ENABLED, {"0": 3})
        assert await m.Ability.filter(channel_id=dead, enabled=False).count() == 0
        assert await key_state(mixed) == (m.CHANNEL_ENABLED, {"0": 3})
