"""The relay's own automatic disable tells the root user (issue 29), as new-api's
``DisableChannel`` does and as the channel monitor here does, in the same words: once, by the
call that disabled the channel (a multi-key channel: when its last key goes)."""

from __future__ import annotations

import asyncio

import openai
import pytest

from faregate import jsonutil
from faregate.accounts.notify import Notification, NotifyTarget
from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI, Fault

MODEL = "gpt-4o-mini"
GOOD, BAD, DEAD = "sk-good-key-0123456789", "sk-bad-key-0123456789", "sk-dead-key-0123456789"


class Recorder:
    """A notifier of the webhook kind that keeps what it is given."""

    kind = "webhook"

    def __init__(self) -> None:
        self.sent: list[tuple[str, Notification]] = []

    async def send(self, target: NotifyTarget, note: Notification) -> None:
        self.sent.append((target.username, note))


@pytest.fixture
async def recorder(gateway: GatewayServer, admin: AdminClient) -> Recorder:
    recorder = Recorder()
    gateway.gateway.notifiers["webhook"] = recorder
    await m.User.filter(role=m.ROLE_ROOT).update(setting='{"notify_type": "webhook"}')
    return recorder


async def settled(gateway: GatewayServer) -> None:
    """Every background task done (the disable, then the notice it spawns)."""
    gw = gateway.gateway
    while gw._tasks:
        await asyncio.wait(list(gw._tasks))


async def ask(gateway: GatewayServer, key: str) -> None:
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
    try:
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    finally:
        await client.close()


async def test_a_channel_the_relay_disables_is_told_to_the_root_once(
    gateway: GatewayServer, admin: AdminClient, recorder: Recorder
) -> None:
    async with FakeOpenAI() as a, FakeOpenAI() as b:
        id_a = await admin.add_channel(base_url=a.base_url, models=MODEL, name="A", priority=10)
        await admin.add_channel(base_url=b.base_url, models=MODEL, name="B", priority=0)
        await admin.set_option("RetryTimes", "2")
        key = await admin.add_token()
        a.push_fault(Fault("status", status=401))
        await ask(gateway, key)  # answered by B
        await settled(gateway)
        assert (await m.Channel.get(id=id_a)).status == m.CHANNEL_AUTO_DISABLED
        [(whom, note)] = recorder.sent
        assert whom == "root" and note.type == "channel_update"
        assert note.title == f"通道「A」（#{id_a}）已被禁用"
        assert note.text().startswith(note.title + "，原因：upstream answered 401")
        # disabled already: another worker's (or the monitor's) disable tells nobody again
        assert not await gateway.gateway.disable_channel(id_a, "again")
        await ask(gateway, key)
        await settled(gateway)
        assert len(recorder.sent) == 1


async def test_a_multi_key_channel_is_told_when_its_last_key_goes(
    gateway: GatewayServer, admin: AdminClient, recorder: Recorder
) -> None:
    async with FakeOpenAI(api_key=GOOD) as fake:  # refuses every other key with a 401
        channel_id = await admin.ok(
            "POST",
            "/api/channel/",
            json={
                "mode": "multi_to_single",
                "multi_key_mode": "polling",
                "channel": {
                    "type": 1,
                    "name": "multi",
                    "key": f"{BAD}\n{DEAD}",
                    "base_url": fake.base_url,
                    "models": MODEL,
                },
            },
        )
        key = await admin.add_token()
        with pytest.raises(openai.APIStatusError):
            await ask(gateway, key)  # the first key 401s (disabled alone), then the second
        await settled(gateway)
        row = await m.Channel.get(id=channel_id)
        assert row.status == m.CHANNEL_AUTO_DISABLED
        assert jsonutil.loads(row.channel_info)["multi_key_status_list"] == {"0": 3, "1": 3}
        [(whom, note)] = recorder.sent  # one notice: the key that took the channel with it
        assert whom == "root" and note.title == f"通道「multi」（#{channel_id}）已被禁用"
