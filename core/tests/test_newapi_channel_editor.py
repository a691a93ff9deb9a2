"""What new-api's channel editor calls (issue 28, item 7): the models of a channel not saved yet
(``POST /api/channel/fetch_models``, which answered 405), the prefill groups
(``/api/prefill_group``) and the upstream model-update check (``/api/channel/upstream_updates/*``),
which answered 404, and a channel's ``settings`` kept beside ``setting`` (they came back folded
into ``setting``, and the editor reset them on save)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

KEY = "sk-editor-upstream-0123456789"


async def _admin_user(gateway: GatewayServer, admin: AdminClient) -> AdminClient:
    await admin.ok("POST", "/api/user/", json={"username": "ada", "password": ROOT_PASSWORD, "role": m.ROLE_ADMIN})
    client = AdminClient(gateway.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login", json={"username": "ada",
                                                                       "password": ROOT_PASSWORD}))["id"]
    return client


async def test_the_models_of_a_channel_not_saved_yet(gateway: GatewayServer, admin: AdminClient) -> None:
    """``{base_url, type, key}`` as the editor sends it: the upstream's model ids, asked as a saved
    channel's are (its first key, the channel's provider); root only, as new-api's."""
    async with FakeOpenAI(key=KEY, models=["new-model", "bad,name"]) as fake:
        form = {"base_url": fake.base_url + "/", "type": 1, "key": f"{KEY}\nsk-second"}
        models = await admin.ok("POST", "/api/channel/fetch_models", json=form)
        assert models == ["gpt-4o", "gpt-4o-mini", "gpt-3.5-turbo", "new-model"]  # no name a channel cannot hold
        assert fake.requests[-1]["path"] == "/v1/models"
        assert await m.Channel.all().count() == 0  # nothing saved
        # the upstream's refusal: success false, the key never in it
        fake.fail_next(401, f"Incorrect API key provided: {KEY}")
        refused = await admin.call("POST", "/api/channel/fetch_models", json=form)
        assert refused["success"] is False and "401" in refused["message"] and KEY not in refused["message"]
        ada = await _admin_user(gateway, admin)
        assert (await ada.call("POST", "/api/channel/fetch_models", json=form))["success"] is False  # not root
        await ada.close()
    headers = {"New-Api-User": str(admin.user_id)}
    for body, field in (({"type": 1, "key": ""}, "key"), ({"type": "1", "key": "k"}, "type"),
                        ({"type": 1, "key": "k", "base_url": "ftp://x"}, "base_url"),
                        ({"type": 1, "key": "k", "base_url": "http://169.254.169.254"}, "base_url"),
                        ({"type": 424242, "key": "k"}, "type"), ({"type": 1, "key": "k", "extra": 1}, "extra")):
        resp = await admin.http.post("/api/channel/fetch_models", json=body, headers=headers)
        assert resp.status_code == 400 and field in resp.json()["message"], (body, resp.text)


async def test_prefill_groups(gateway: GatewayServer, admin: AdminClient) -> None:
    """The console's calls as it makes them (``/api/prefill_group`` without the slash): a model
    group (a list), an endpoint group (the form's JSON text), the list by type, an edit sending
    the loaded group back, a name taken, a delete."""
    models = await admin.ok("POST", "/api/prefill_group", json={"name": "openai", "type": "model",
                                                                "items": ["gpt-4o", "gpt-4o-mini"],
                                                                "description": "the usual"})
    endpoints_text = json.dumps({"openai": {"path": "/v1/chat/completions", "method": "POST"}})
    endpoints = await admin.ok("POST", "/api/prefill_group", json={"name": "chat", "type": "endpoint",
                                                                   "items": endpoints_text})
    assert models["items"] == ["gpt-4o", "gpt-4o-mini"] and endpoints["items"] == endpoints_text
    assert [g["name"] for g in await admin.ok("GET", "/api/prefill_group?type=model")] == ["openai"]
    assert {g["name"] for g in await admin.ok("GET", "/api/prefill_group")} == {"openai", "chat"}
    edited = await admin.ok("PUT", "/api/prefill_group", json={**models, "items": ["gpt-4o"]})
    assert edited["items"] == ["gpt-4o"] and edited["updated_time"] >= models["updated_time"]
    taken = await admin.call("POST", "/api/prefill_group", json={"name": "openai", "type": "tag", "items": []})
    assert taken["success"] is False and "exists" in taken["message"]
    assert (await admin.call("PUT", "/api/prefill_group", json={**endpoints, "name": "openai"}))["success"] is False
    headers = {"New-Api-User": str(admin.user_id)}
    for body, field in (({"type": "model"}, "name"), ({"name": "x", "type": ""}, "type"),
                        ({"name": "x", "type": "model", "items": [1]}, "items"),
                        ({"name": "x" * 65, "type": "model"}, "name")):
        resp = await admin.http.post("/api/prefill_group", json=body, headers=headers)
        assert resp.status_code == 400 and field in resp.json()["message"], (body, resp.text)
    assert await admin.ok("DELETE", f"/api/prefill_group/{models['id']}") is None
    assert [g["name"] for g in await admin.ok("GET", "/api/prefill_group")] == ["chat"]
    async with httpx.AsyncClient(base_url=gateway.base_url) as anonymous:
        assert (await anonymous.get("/api/prefill_group")).json()["success"] is False


async def test_settings_come_back_as_they_were_saved(gateway: GatewayServer, admin: AdminClient) -> None:
    """The editor's ``setting`` (its extra settings) and ``settings`` (other settings: key type,
    API version, the model-update check) come back apart, so a save keeps what it loaded; the
    relay reads them as one. A channel saved while they were merged shows its other settings too."""
    setting = {"force_format": False, "proxy": "", "system_prompt": "be brief"}
    settings = {"azure_responses_version": "preview", "upstream_model_update_check_enabled": True}
    made = await admin.add_channel(base_url="http://127.0.0.1:9", models="m1", setting=json.dumps(setting),
                                   settings=json.dumps(settings))
    view = await admin.ok("GET", f"/api/channel/{made}")
    assert (json.loads(view["setting"]), json.loads(view["settings"])) == (setting, settings)
    listed = (await admin.ok("GET", "/api/channel/"))["items"][0]
    assert json.loads(listed["settings"]) == settings
    assert gateway.gateway.snapshot.channels[made].setting == {**setting, **settings}
    await admin.ok("PUT", "/api/channel/", json={**view, "key": "", "name": "renamed"})  # the editor's save
    row = await m.Channel.get(id=made)
    assert (json.loads(row.setting), json.loads(row.settings), row.name) == (setting, settings, "renamed")
    # stored by an earlier version, the other settings merged into setting: shown as settings too
    await m.Channel.filter(id=made).update(setting=json.dumps({**setting, "vertex_key_type": "api_key"}), settings="")
    assert json.loads((await admin.ok("GET", f"/api/channel/{made}"))["settings"]) == {"vertex_key_type": "api_key"}


async def _detect(admin: AdminClient, channel: int) -> dict[str, Any]:
    found: dict[str, Any] = await admin.ok("POST", "/api/channel/upstream_updates/detect", json={"id": channel})
    return found


async def test_upstream_model_updates(gateway: GatewayServer, admin: AdminClient) -> None:
    """new-api's check: the upstream's models the channel lacks (a mapping's target counts as
    had; ignored names and ``regex:`` patterns left out; names a channel cannot hold never
    offered) and those it lists no more (a mapping's source stays); applying adds, removes and
    ignores the chosen ones, and the relay routes the new model at once."""
    async with FakeOpenAI(key=KEY, models=["new-model", "dall-e-3", "tts-1", "x" * 300, "evil,name"]) as fake:
        settings = {"upstream_model_update_check_enabled": True,
                    "upstream_model_update_ignored_models": ["regex:^dall-", "tts-1", "regex:(a+)+$"]}
        made = await admin.add_channel(base_url=fake.base_url, key=KEY, models="gpt-4o,old-model,alias",
                                       model_mapping=json.dumps({"alias": "gpt-4o-mini"}),
                                       settings=json.dumps(settings))
        found = await _detect(admin, made)
        assert (found["channel_id"], found["add_models"], found["remove_models"]) == (
            made, ["gpt-3.5-turbo", "new-model"], ["old-model"])
        assert found["last_check_time"] > 0 and found["auto_added_models"] == 0
        stored = json.loads((await admin.ok("GET", f"/api/channel/{made}"))["settings"])
        assert stored["upstream_model_update_last_detected_models"] == ["gpt-3.5-turbo", "new-model"]
        # only what is pending can be applied: "made-up" is left out
        applied = await admin.ok("POST", "/api/channel/upstream_updates/apply", json={
            "id": made, "add_models": ["new-model", "made-up"], "remove_models": ["old-model"],
            "ignore_models": ["gpt-3.5-turbo"]})
        assert (applied["added_models"], applied["removed_models"], applied["ignored_models"]) == (
            ["new-model"], ["old-model"], ["gpt-3.5-turbo"])
        assert (applied["remaining_models"], applied["remaining_remove_models"]) == ([], [])
        assert applied["models"] == "gpt-4o,alias,new-model"
        assert "new-model" in gateway.gateway.snapshot.routes["default"]  # routed at once
        assert "old-model" not in gateway.gateway.snapshot.routes["default"]
        again = await _detect(admin, made)  # the ignored model stays out
        assert (again["add_models"], again["remove_models"]) == ([], [])
        # every channel with the check on, at once
        await admin.ok("PUT", "/api/channel/", json={"id": made, "models": "gpt-4o,alias,new-model,gone-model"})
        detected = await admin.ok("POST", "/api/channel/upstream_updates/detect_all")
        assert (detected["processed_channels"], detected["detected_remove_models"]) == (1, 1)
        done = await admin.ok("POST", "/api/channel/upstream_updates/apply_all")
        assert (done["processed_channels"], done["removed_models"]) == (1, 1)
        assert (await m.Channel.get(id=made)).models == "gpt-4o,alias,new-model"
        # an upstream that cannot be asked: success false, the check time kept
        fake.fail_next(500, "down")
        assert (await admin.call("POST", "/api/channel/upstream_updates/detect", json={"id": made}))[
            "success"] is False
    missing = await admin.call("POST", "/api/channel/upstream_updates/detect", json={"id": 999})
    assert missing["success"] is False and "not found" in missing["message"]
