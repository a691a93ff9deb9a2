"""The gateway's side of Bedrock's authentication: a key AWS refuses (a secret that makes a
wrong signature, an unknown API key) is the channel's dead key (a 401 the caller hears
neutrally, the channel disabled when automatic disabling is on), and no part of a key
(access key, secret key, API key) ever reaches a caller, a log line or a log row."""

from __future__ import annotations

import logging
from typing import Any

import openai
import pytest

from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs, error_logs
from faregate_adapter_bedrock.testing import ACCESS_KEY, API_KEY, REGION, FakeBedrock

from .conftest import NOVA

WRONG_SECRET = "Wr0ngSecretKeyWr0ngSecretKeyWr0ngSecret0"


async def _client(gateway: GatewayServer, admin: AdminClient, key: str, **fields: Any) -> openai.AsyncOpenAI:
    await admin.set_option("ModelRatio", {NOVA: 0.4})
    await admin.add_channel(type=33, base_url=fields.pop("base_url"), key=key, name="aws", models=NOVA, **fields)
    token = await admin.add_token(remain_quota=5_000_000)
    return openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)


@pytest.mark.parametrize("key", [f"{ACCESS_KEY}|{WRONG_SECRET}|{REGION}", f"{API_KEY[:-4]}XXX=|{REGION}"])
async def test_a_key_aws_refuses_is_the_channels_dead_key(gateway: GatewayServer, admin: AdminClient,
                                                          fake_bedrock: FakeBedrock, key: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    await admin.set_option("AutomaticDisableChannelEnabled", "true")
    client = await _client(gateway, admin, key, base_url=fake_bedrock.base_url)
    with pytest.raises(openai.AuthenticationError) as refused:
        await client.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": "hi"}])
    await client.close()
    assert "refused the channel's credentials" in refused.value.message
    assert len(fake_bedrock.requests) == 1  # the fake checked it, and said no
    channels = (await admin.ok("GET", "/api/channel/"))["items"]
    assert channels[0]["status"] == 3  # disabled automatically
    _assert_nothing_of(key, caplog, [row.content for row in await error_logs(gateway)], refused.value.message)


@pytest.mark.parametrize("mode", ["sigv4", "api_key"])
async def test_no_part_of_a_key_is_ever_logged(gateway: GatewayServer, admin: AdminClient, fake_bedrock: FakeBedrock,
                                               mode: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    key = fake_bedrock.sigv4_key if mode == "sigv4" else fake_bedrock.api_key_channel_key
    client = await _client(gateway, admin, key, base_url=fake_bedrock.base_url)
    reply = await client.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content
    # an upstream that echoes what it was sent (the API key, the access key id) and more (the secret key,
    # the whole channel key): each part of this channel's key is redacted
    fake_bedrock.fail_next(400, "bad request from " + " / ".join([*key.split("|"), key]))
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": "again"}])
    await client.close()
    assert "[REDACTED]" in refused.value.message
    rows = [row.content for row in await error_logs(gateway)] + [row.other for row in await consume_logs(gateway)]
    _assert_nothing_of(key, caplog, rows, refused.value.message)


def _assert_nothing_of(key: str, caplog: pytest.LogCaptureFixture, rows: list[str], *answers: str) -> None:
    secrets = [key, *(p for p in key.split("|") if p != REGION)]
    texts = [r.getMessage() for r in caplog.records] + rows + list(answers)
    for secret in secrets:
        for text in texts:
            assert secret not in text, text
