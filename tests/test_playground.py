"""The playground, ``POST /pg/chat/completions`` (new-api's console chat): OpenAI chat for the
logged-in user (session cookie plus ``New-Api-User``), never an API key or access token; the
body's ``group`` picks a usable group and never reaches the upstream; the user's wallet pays and
the consume log names the in-memory key ``playground-<group>``. Clients: httpx and the official
``openai`` SDK; upstreams: the fake OpenAI and (converted) the fake Anthropic."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from faregate import jsonutil
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import consume_logs
from faregate.testing.payments import user_session
from faregate_adapter_anthropic.testing.fixtures import FAKE_ANTHROPIC_KEY
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.schema import validate_chat_chunk, validate_chat_completion, validate_error

MODEL = "gpt-4o-mini"
RATIO, COMPLETION = 0.075, 4.0  # built-in ratios of gpt-4o-mini
PATH = "/pg/chat/completions"
HELLO = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}


def expected_quota(prompt: int, completion: int, group_ratio: float = 1.0) -> int:
    return max(1, round((prompt + completion * COMPLETION) * RATIO * group_ratio))


@pytest.fixture
async def player(gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI) -> Any:
    """A logged-in ordinary user with quota, and a channel serving MODEL to ``default`` and ``vip``."""
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, group="default,vip")
    user = await user_session(gateway, admin, "player")
    await admin.ok("PUT", "/api/user/", json={"id": user.user_id, "quota": 5_000_000})
    yield user
    await user.close()


async def wallet(user: AdminClient) -> int:
    """The user's quota as they see it (leases the workers hold included)."""
    quota: int = (await user.ok("GET", "/api/user/self"))["quota"]
    return quota


async def play(user: AdminClient, body: Any, **headers: str) -> httpx.Response:
    """A playground request with the user's cookie and ``New-Api-User`` (unless overridden)."""
    return await user.http.post(PATH, json=body, headers={"New-Api-User": str(user.user_id), **headers})


def refused(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    validate_error(resp.json())
    message: str = resp.json()["error"]["message"]
    return message


async def test_httpx_regular_and_stream_charge_the_users_wallet(gateway: GatewayServer, admin: AdminClient,
                                                                player: AdminClient,
                                                                fake_openai: FakeOpenAI) -> None:
    before = await wallet(player)
    resp = await play(player, HELLO)
    assert resp.status_code == 200, resp.text
    reply = resp.json()
    validate_chat_completion(reply)
    assert reply["choices"][0]["message"]["content"] == "Hello from fake-openai! You said: hello"
    async with player.http.stream("POST", PATH, json={**HELLO, "stream": True},
                                  headers={"New-Api-User": str(player.user_id)}) as streamed:
        assert streamed.status_code == 200
        assert streamed.headers["content-type"].startswith("text/event-stream")
        events = [line[6:] async for line in streamed.aiter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    for event in events[:-1]:
        validate_chat_chunk(jsonutil.loads(event))
    rows = await consume_logs(gateway)
    assert [(r.user_id, r.token_id, r.token_name, r.group, r.is_stream) for r in rows] == [
        (player.user_id, 0, "playground-default", "default", False),
        (player.user_id, 0, "playground-default", "default", True)]
    assert rows[0].quota == expected_quota(reply["usage"]["prompt_tokens"], reply["usage"]["completion_tokens"])
    assert await wallet(player) == before - rows[0].quota - rows[1].quota
    assert jsonutil.loads(rows[0].other)["request_path"] == PATH


async def test_the_openai_sdk_regular_and_stream(gateway: GatewayServer, admin: AdminClient,
                                                 player: AdminClient) -> None:
    before = await wallet(player)
    # the SDK always sends Authorization: beside a login session it is ignored
    async with httpx.AsyncClient(cookies=player.http.cookies) as http:
        client = openai.AsyncOpenAI(base_url=gateway.base_url + "/pg", api_key="unused", max_retries=0,
                                    default_headers={"New-Api-User": str(player.user_id)}, http_client=http)
        reply = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "sdk"}])
        assert reply.choices[0].message.content == "Hello from fake-openai! You said: sdk"
        stream = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "live"}],
                                                      stream=True, stream_options={"include_usage": True})
        text, usages = "", []
        async for chunk in stream:
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
            if chunk.usage is not None:
                usages.append(chunk.usage)
    assert text == "Hello from fake-openai! You said: live" and len(usages) == 1
    rows = await consume_logs(gateway)
    assert [r.token_name for r in rows] == ["playground-default"] * 2
    assert (rows[1].prompt_tokens, rows[1].completion_tokens) == (usages[0].prompt_tokens,
                                                                  usages[0].completion_tokens)
    assert await wallet(player) == before - sum(r.quota for r in rows)


async def test_keys_tokens_and_strangers_are_refused(gateway: GatewayServer, admin: AdminClient,
                                                     player: AdminClient, fake_openai: FakeOpenAI) -> None:
    key = await admin.add_token()
    access_token = await player.ok("GET", "/api/user/token")
    sent = len(fake_openai.requests)
    async with httpx.AsyncClient(base_url=gateway.base_url) as stranger:
        # an API key, even a valid one with the key owner named: 401, in OpenAI's shape
        resp = await stranger.post(PATH, json=HELLO, headers={"Authorization": f"Bearer {key}",
                                                              "New-Api-User": str(admin.user_id)})
        assert "login session" in refused(resp, 401)
        # the user's access token (the management API's key): not here, as new-api
        resp = await stranger.post(PATH, json=HELLO, headers={"Authorization": access_token,
                                                              "New-Api-User": str(player.user_id)})
        refused(resp, 401)
        refused(await stranger.post(PATH, json=HELLO), 401)  # nobody
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/pg", api_key=key, max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    await client.close()
    # the session without New-Api-User, or naming someone else
    resp = await player.http.post(PATH, json=HELLO)
    assert "New-Api-User" in refused(resp, 401)
    assert "does not match" in refused(await play(player, HELLO, **{"New-Api-User": str(admin.user_id)}), 401)
    refused(await play(player, HELLO, **{"New-Api-User": "1" * 5000}), 401)
    # a disabled user's session stays, but is refused
    await admin.ok("POST", "/api/user/manage", json={"id": player.user_id, "action": "disable"})
    assert "disabled" in refused(await play(player, HELLO), 403)
    assert len(fake_openai.requests) == sent  # nothing went upstream
    assert await consume_logs(gateway) == []


async def test_the_body_group_chooses_a_usable_group_and_stays_home(gateway: GatewayServer, admin: AdminClient,
                                                                     player: AdminClient,
                                                                     fake_openai: FakeOpenAI) -> None:
    await admin.set_option("UserUsableGroups", {"default": "Default", "vip": "VIP"})
    await admin.set_option("GroupRatio", {"default": 1, "vip": 2})
    resp = await play(player, {**HELLO, "group": "vip"})
    assert resp.status_code == 200, resp.text
    usage = resp.json()["usage"]
    upstream = fake_openai.requests[-1]
    assert "group" not in upstream["json"] and b'"group"' not in upstream["body"]
    async with player.http.stream("POST", PATH, json={**HELLO, "group": "vip", "stream": True},
                                  headers={"New-Api-User": str(player.user_id)}) as streamed:
        assert streamed.status_code == 200
        await streamed.aread()
    assert "group" not in fake_openai.requests[-1]["json"]
    rows = await consume_logs(gateway)
    assert [(r.group, r.token_name) for r in rows] == [("vip", "playground-vip")] * 2
    assert jsonutil.loads(rows[0].other)["group_ratio"] == 2
    assert rows[0].quota == expected_quota(usage["prompt_tokens"], usage["completion_tokens"], 2)
    # the user's own group by name, or by an empty field
    for group in ("default", ""):
        assert (await play(player, {**HELLO, "group": group})).status_code == 200
    assert [r.token_name for r in (await consume_logs(gateway))[2:]] == ["playground-default"] * 2
    # a group the user may not use: 403 naming it; a group that is no string: 400
    assert "svip" in refused(await play(player, {**HELLO, "group": "svip"}), 403)
    assert refused(await play(player, {**HELLO, "group": ["vip"]}), 400)
    await admin.set_option("UserUsableGroups", {"default": "Default"})  # withdrawn: refused at once
    assert "vip" in refused(await play(player, {**HELLO, "group": "vip"}), 403)


async def test_a_user_out_of_quota_gets_the_usual_error(gateway: GatewayServer, admin: AdminClient,
                                                        player: AdminClient, fake_openai: FakeOpenAI) -> None:
    await admin.ok("PUT", "/api/user/", json={"id": player.user_id, "quota": 0})
    sent = len(fake_openai.requests)
    resp = await play(player, HELLO)
    refused(resp, 403)
    assert resp.json()["error"]["code"] == "insufficient_user_quota"
    assert len(fake_openai.requests) == sent


async def test_converted_for_an_anthropic_channel(gateway: GatewayServer, admin: AdminClient,
                                                  player: AdminClient, fake_anthropic: Any) -> None:
    claude = "claude-sonnet-4-5"
    await admin.add_channel(base_url=fake_anthropic.base_url, models=claude, type=14, key=FAKE_ANTHROPIC_KEY,
                            name="anthropic")
    resp = await play(player, {"model": claude, "group": "default", "max_tokens": 64,
                               "messages": [{"role": "user", "content": "convert me"}]})
    assert resp.status_code == 200, resp.text
    validate_chat_completion(resp.json())
    assert resp.json()["choices"][0]["message"]["content"]
    assert "group" not in fake_anthropic.requests[-1]["json"]
    (row,) = await consume_logs(gateway)
    assert (row.model_name, row.token_name) == (claude, "playground-default")
