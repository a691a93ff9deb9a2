"""A user may only give an API key a group they may use (issue 8, #1): their own group,
the UserUsableGroups option, ``auto`` where that option lists it. Checked when the key is
created or updated, and again per request (the group may have been withdrawn since)."""

from __future__ import annotations

from typing import Any

import httpx

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI


async def _user_session(server: GatewayServer, admin: AdminClient, username: str) -> AdminClient:
    await admin.ok("POST", "/api/user/", json={"username": username, "password": ROOT_PASSWORD})
    user = AdminClient(server.base_url)
    data = await user.ok("POST", "/api/user/login", json={"username": username, "password": ROOT_PASSWORD})
    user.user_id = data["id"]
    return user


async def _create_key(user: AdminClient, group: str) -> dict[str, Any]:
    return await user.call("POST", "/api/token/", json={"name": "k", "remain_quota": 500_000, "group": group,
                                                        "expired_time": -1})


async def test_a_user_cannot_pick_another_groups_key(gateway: GatewayServer, admin: AdminClient) -> None:
    user = await _user_session(gateway, admin, "alice")
    refused = await user.http.post("/api/token/", json={"name": "k", "group": "svip", "expired_time": -1},
                                   headers={"New-Api-User": str(user.user_id)})
    assert refused.status_code == 403 and "svip" in refused.json()["message"]
    assert await m.Token.filter(group="svip").count() == 0
    created = await _create_key(user, "default")
    assert created["success"], created
    updated = await user.http.put("/api/token/", json={"id": created["data"]["id"], "group": "vip"},
                                  headers={"New-Api-User": str(user.user_id)})
    assert updated.status_code == 403
    assert (await m.Token.get(id=created["data"]["id"])).group == "default"
    await admin.set_option("UserUsableGroups", {"default": "Default", "vip": "VIP"})
    assert (await _create_key(user, "vip"))["success"]
    await user.close()


async def test_a_withdrawn_group_is_refused_per_request(gateway: GatewayServer, admin: AdminClient,
                                                        fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o", group="vip")
    await admin.set_option("UserUsableGroups", {"default": "Default", "vip": "VIP"})
    user = await _user_session(gateway, admin, "bob")
    await m.User.filter(username="bob").update(quota=1_000_000)
    await gateway.gateway.feed.publish("user", user.user_id)
    created = await _create_key(user, "vip")
    key = "sk-" + (await user.ok("POST", f"/api/token/{created['data']['id']}/key"))["key"]

    async def ask() -> httpx.Response:
        async with httpx.AsyncClient(base_url=gateway.base_url) as http:
            return await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                                   json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})

    first = await ask()
    assert first.status_code == 200, first.text
    await admin.set_option("UserUsableGroups", {"default": "Default"})
    refused = await ask()
    assert refused.status_code == 403 and "no longer usable" in refused.json()["error"]["message"]
    await user.close()
