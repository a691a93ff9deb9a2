"""A channel of a type no installed plugin serves is never stored (issue 15): refused with a
400 in the management envelope naming the installed types, however it would be made (one
channel, a batch of keys, one multi-key channel, a type changed on update, a copy of a
channel whose plugin is gone). Such a channel could never be called: every request routed to
it would fail, and before this the relay found out only then. The import from new-api refuses
them the same way, naming each in its report (tests/importing)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer

CHANNEL = {"type": 1, "key": "sk-upstream", "name": "ch", "base_url": "https://api.example.com", "models": "gpt-4o",
           "group": "default"}


async def post(admin: AdminClient, body: dict[str, Any]) -> dict[str, Any]:
    resp = await admin.http.post("/api/channel/", json=body, headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400, resp.text
    answer: dict[str, Any] = resp.json()
    assert answer["success"] is False
    return answer


@pytest.mark.parametrize(("mode", "key"), [("single", "sk-a"), ("batch", "sk-a\nsk-b"),
                                           ("multi_to_single", "sk-a\nsk-b")])
async def test_an_unserved_type_is_refused_in_every_add_mode(admin: AdminClient, gateway: GatewayServer, mode: str,
                                                             key: str) -> None:
    answer = await post(admin, {"mode": mode, "channel": {**CHANNEL, "type": 2, "key": key}})  # new-api's Midjourney
    providers = gateway.gateway.providers
    installed = sorted(providers)
    assert answer["message"] == ("type 2 is not served by any installed plugin (installed types: "
                                 + ", ".join(f"{t} {providers[t].channel_type_name(t)}" for t in installed) + ")")
    assert {1, 3, 14, 24, 1001} <= set(installed)  # OpenAI and its presets, Azure, Anthropic, Gemini, Groq …
    # each type by its number and name, as GET /api/channel/types names it
    for named in ("1 openai,", "3 azure,", "14 anthropic,", "24 gemini,", "43 deepseek,", "1001 groq"):
        assert named in answer["message"], named
    assert await m.Channel.all().count() == 0


async def test_an_update_to_an_unserved_type_is_refused(admin: AdminClient) -> None:
    channel_id = await admin.add_channel(base_url=CHANNEL["base_url"], models="gpt-4o")
    resp = await admin.http.put("/api/channel/", json={"id": channel_id, "type": 9999},
                                headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and "installed types" in resp.json()["message"]
    assert (await m.Channel.get(id=channel_id)).type == 1


async def test_a_copy_of_a_channel_whose_plugin_is_gone_is_refused(admin: AdminClient) -> None:
    channel_id = await admin.add_channel(base_url=CHANNEL["base_url"], models="gpt-4o")
    await m.Channel.filter(id=channel_id).update(type=9999)  # its plugin uninstalled since
    resp = await admin.http.post(f"/api/channel/copy/{channel_id}", headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and "type 9999 is not served" in resp.json()["message"]
    assert await m.Channel.all().count() == 1


async def test_the_installed_types_are_those_of_the_plugins_loaded(
        make_gateway: Callable[..., Awaitable[GatewayServer]]) -> None:
    """With the OpenAI plugin alone, Anthropic's and Gemini's types are refused, the OpenAI
    plugin's (its presets, Azure) accepted."""
    server = await make_gateway(plugins=["faregate-adapter-openai"])
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    try:
        for refused in (14, 24):
            answer = await post(admin, {"mode": "single", "channel": {**CHANNEL, "type": refused}})
            assert f"type {refused} is not served" in answer["message"] and ", 14 " not in answer["message"]
            assert "1 openai, 3 azure," in answer["message"]
        for accepted in (3, 43, 1001):
            await admin.add_channel(base_url=CHANNEL["base_url"], models="gpt-4o", type=accepted)
    finally:
        await admin.close()
