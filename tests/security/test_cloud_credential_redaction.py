"""Cloud credentials never reach a caller, a log line or a log row: not the parts of a
composite key (new-api's ``AK|SK|region`` and ``APIKEY|region`` for AWS: what goes upstream
is one part, the API key as a bearer token, the access key id in a signature, so that is
what an upstream can echo), not a service account's private key, its signed assertion or
the access tokens it is exchanged for (an upstream that echoes the token it was sent is
redacted as if it had echoed the channel key), whether the call succeeds, the upstream
refuses it or the token exchange fails."""

from __future__ import annotations

import logging
from typing import Any

import openai
import pytest

from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs, error_logs
from faregate_adapter_bedrock.testing import ACCESS_KEY, API_KEY, REGION, SECRET_KEY, FakeBedrock
from faregate_adapter_vertex.testing import FakeGoogleOAuth, FakeVertex, TestServiceAccount, make_service_account

NOVA, GEMINI = "amazon.nova-pro-v1:0", "gemini-2.5-flash"


async def _client(gateway: GatewayServer, admin: AdminClient, **channel: Any) -> openai.AsyncOpenAI:
    await admin.set_option("ModelRatio", {NOVA: 1, GEMINI: 1})
    await admin.set_option("RetryTimes", "0")
    await admin.add_channel(name="cloud", **channel)
    return openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0)


async def _texts(gateway: GatewayServer, caplog: pytest.LogCaptureFixture, *answers: str) -> list[str]:
    rows = await error_logs(gateway) + await consume_logs(gateway)
    return [r.getMessage() for r in caplog.records] + [f"{row.content} {row.other}" for row in rows] + list(answers)


@pytest.mark.parametrize("key", [f"{ACCESS_KEY}|{SECRET_KEY}|{REGION}", f"{API_KEY}|{REGION}"])
async def test_the_parts_of_an_aws_key_are_redacted(gateway: GatewayServer, admin: AdminClient,
                                                     fake_bedrock: FakeBedrock, caplog: pytest.LogCaptureFixture,
                                                     key: str) -> None:
    caplog.set_level(logging.DEBUG)
    client = await _client(gateway, admin, type=33, base_url=fake_bedrock.base_url, key=key, models=NOVA)
    fake_bedrock.fail_next(400, "invalid request from " + ", ".join(key.split("|")[:2]))
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model=NOVA, messages=[{"role": "user", "content": "hi"}])
    await client.close()
    for text in await _texts(gateway, caplog, refused.value.message, str(refused.value.body)):
        for part in key.split("|")[:2]:
            assert part not in text, text


async def test_service_account_secrets_stay_in(gateway: GatewayServer, admin: AdminClient, fake_vertex: FakeVertex,
                                               fake_google_oauth: FakeGoogleOAuth, vertex_account: TestServiceAccount,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = await _client(gateway, admin, type=41, base_url=fake_vertex.base_url, key=vertex_account.key,
                           models=GEMINI, other="us-central1")
    answers = [(await client.chat.completions.create(model=GEMINI, messages=[
        {"role": "user", "content": "hi"}])).model_dump_json()]
    (token,) = fake_google_oauth.issued
    fake_vertex.fail_next(400, f"Request had invalid credentials: Bearer {token} (token {token})")
    with pytest.raises(openai.BadRequestError) as echoed:
        await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "again"}])
    answers.append(echoed.value.message)
    # a key the token endpoint refuses: the exchange fails, with the OAuth error code only
    stranger = make_service_account(fake_google_oauth.token_uri, name="stranger", slot=3)
    await admin.ok("PUT", "/api/channel/", json={"id": 1, "key": stranger.key})
    with pytest.raises(openai.APIStatusError) as failed:
        await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "third"}])
    answers.append(failed.value.message)
    await client.close()
    secrets = [token, vertex_account.info["private_key"].splitlines()[2], stranger.info["private_key"].splitlines()[2]]
    secrets += [r["body"].decode().split("assertion=")[1][-40:] for r in fake_google_oauth.requests]
    for text in await _texts(gateway, caplog, *answers):
        for secret in secrets:
            assert secret not in text, text
    assert "[REDACTED]" in echoed.value.message and "refused: invalid_grant" in failed.value.message
