"""Cloud channel keys cannot steer the gateway's outbound calls: a service account's
``token_uri`` (where the gateway posts an assertion signed with the account's key, and
whose answer it trusts) must be https, or plain http only to this host's loopback, so a
key cannot point it at a cloud metadata server or a host on the internal network; a region
(in an AWS key, in ``other``) or a project becomes part of a host name or path only when it
is one, so ``us-east-1.evil.example`` cannot move ``bedrock-runtime.{region}.amazonaws.com``
elsewhere. Refused when the channel is saved (a 400 naming the key, nothing stored), and
again when a row that never went through the API is called: no outbound request is made."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_bedrock.testing import ACCESS_KEY, API_KEY, SECRET_KEY, FakeBedrock
from faregate_adapter_vertex.testing import FakeGoogleOAuth, TestServiceAccount

AWS = {"type": 33, "models": "amazon.nova-pro-v1:0"}
VERTEX = {"type": 41, "models": "gemini-2.5-flash"}


def _account_with(account: TestServiceAccount, token_uri: str) -> str:
    return json.dumps({**account.info, "token_uri": token_uri}, indent=2)


async def _refused(admin: AdminClient, base: dict[str, Any], **channel: Any) -> str:
    found = await admin.call("POST", "/api/channel/", json={"mode": "single", "channel": {
        "name": "cloud", "group": "default", "base_url": "", **base, **channel}})
    assert found["success"] is False
    return str(found["message"])


@pytest.mark.parametrize("token_uri", ["http://169.254.169.254/computeMetadata/v1/instance/token",
                                       "http://metadata.google.internal/token", "http://10.0.0.7:8080/token",
                                       "ftp://oauth2.googleapis.com/token", "https://a:b@oauth2.googleapis.com/t"])
async def test_a_token_uri_cannot_reach_inward(gateway: GatewayServer, admin: AdminClient,
                                               vertex_account: TestServiceAccount, token_uri: str) -> None:
    message = await _refused(admin, VERTEX, key=_account_with(vertex_account, token_uri))
    assert message.startswith("key: the service-account key: its token_uri")


@pytest.mark.parametrize(("base", "channel"), [
    (AWS, {"key": f"{ACCESS_KEY}|{SECRET_KEY}|us-east-1.evil.example"}),
    (AWS, {"key": f"{API_KEY}|evil.example/"}),
    (AWS, {"key": API_KEY, "other": "attacker.example#"}),
    (VERTEX, {"key": "AQ.Ab8RN6fakeVertexExpressKey0123456789", "other": "evil.example/x"}),
    (VERTEX, {"key": "AQ.Ab8RN6fakeVertexExpressKey0123456789", "other": '{"default": "a.evil.example"}'}),
    (VERTEX, {"key": "AQ.Ab8RN6fakeVertexExpressKey0123456789", "setting": '{"vertex_project": "p/../../x"}'}),
])
async def test_regions_and_projects_cannot_move_the_host(gateway: GatewayServer, admin: AdminClient,
                                                         base: dict[str, Any], channel: dict[str, Any]) -> None:
    assert (await _refused(admin, base, **channel)).startswith("key: ")
    assert (await admin.ok("GET", "/api/channel/"))["total"] == 0


async def test_rows_that_bypassed_the_api_are_refused_when_called(gateway: GatewayServer, admin: AdminClient,
                                                                  fake_bedrock: FakeBedrock,
                                                                  fake_google_oauth: FakeGoogleOAuth,
                                                                  vertex_account: TestServiceAccount) -> None:
    """A row written straight to the database (an old import, a hand edit) is still checked
    where it is used: the call fails over, and nothing leaves the gateway."""
    box = gateway.gateway.box
    bad_keys = [(33, f"{ACCESS_KEY}|{SECRET_KEY}|us-east-1.evil.example", "amazon.nova-pro-v1:0"),
                (41, _account_with(vertex_account, "http://169.254.169.254/token"), "gemini-2.5-flash")]
    await admin.set_option("ModelRatio", {"amazon.nova-pro-v1:0": 1, "gemini-2.5-flash": 1})
    for channel_type, key, model in bad_keys:
        row = await m.Channel.create(type=channel_type, name="bypass", base_url=fake_bedrock.base_url, models=model,
                                     group="default", status=1)
        row.key_enc = box.encrypt(key, f"channel:{row.id}")
        await row.save()
        await m.Ability.create(group="default", model=model, channel_id=row.id, enabled=True, priority=0, weight=0)
        await gateway.gateway.feed.publish("channel", row.id)
    token = await admin.add_token(remain_quota=1_000_000)
    async with openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0) as client:
        for _, _, model in bad_keys:
            with pytest.raises(openai.APIStatusError) as refused:
                await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
            assert refused.value.status_code == 503 and "cannot be" in refused.value.message
    assert fake_bedrock.requests == [] and fake_google_oauth.requests == []
