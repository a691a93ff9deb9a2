"""What new-api's console reads from user rows and the current user (issue 28, item 3): every
user row carries new-api's ``DeletedAt: null`` (its console shows a row with any other value as
deleted and hides its actions), and ``GET /api/user/self`` gives ``setting`` (new-api's JSON text)
and ``sidebar_modules``, so saved notification, sidebar and language preferences come back."""

from __future__ import annotations

import asyncio
import json

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer


async def _login(server: GatewayServer, username: str, password: str = ROOT_PASSWORD) -> AdminClient:
    client = AdminClient(server.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login",
                                      json={"username": username, "password": password}))["id"]
    return client


async def test_every_user_row_says_deleted_at_null(gateway: GatewayServer, admin: AdminClient) -> None:
    created = await admin.ok("POST", "/api/user/", json={"username": "dora", "password": ROOT_PASSWORD})
    rows = [created, await admin.ok("GET", f"/api/user/{created['id']}"),
            *(await admin.ok("GET", "/api/user/"))["items"],
            *(await admin.ok("GET", "/api/user/search", params={"keyword": "dora"}))["items"],
            await admin.ok("PUT", "/api/user/", json={"id": created["id"], "display_name": "Dora"}),
            await admin.ok("GET", "/api/user/self")]
    assert len(rows) == 7  # the list holds root and dora
    for row in rows:
        assert "DeletedAt" in row and row["DeletedAt"] is None, row
    # the console sends the row back whole on edit: accepted
    assert (await admin.ok("PUT", "/api/user/", json={**rows[1], "quota": 10}))["quota"] == 10


async def test_self_gives_back_the_saved_settings_sidebar_and_language(gateway: GatewayServer,
                                                                      admin: AdminClient) -> None:
    await admin.ok("POST", "/api/user/", json={"username": "walt", "password": ROOT_PASSWORD})
    walt = await _login(gateway, "walt")
    fresh = await walt.ok("GET", "/api/user/self")
    assert (fresh["setting"], fresh["sidebar_modules"]) == ("", "")
    assert fresh["permissions"] == {"admin": False, "root": False, "sidebar_settings": True,
                                    "sidebar_modules": {"admin": False}}
    sidebar = json.dumps({"console": {"enabled": True, "log": False}, "chat": {"enabled": False}})
    # the console saves each alone, through PUT /api/user/self, as new-api takes them
    assert await walt.ok("PUT", "/api/user/self", json={"sidebar_modules": sidebar})
    assert await walt.ok("PUT", "/api/user/self", json={"language": "en"})
    notify = {"notify_type": "webhook", "quota_warning_threshold": 5000, "webhook_url": "https://hooks.example/x",
              "webhook_secret": "s3cret-value", "gotify_priority": 5, "accept_unset_model_ratio_model": True,
              "record_ip_log": False}
    await walt.ok("PUT", "/api/user/setting", json=notify)
    me = await walt.ok("GET", "/api/user/self")
    assert me["sidebar_modules"] == sidebar
    setting = json.loads(me["setting"])
    assert setting["language"] == "en" and setting["sidebar_modules"] == sidebar
    assert setting["notify_type"] == "webhook" and setting["quota_warning_threshold"] == 5000
    assert setting["webhook_secret"] is True and "s3cret-value" not in json.dumps(me)  # a secret: only as set
    # the notification form sends back what it read (the secret as true): the stored secret stays
    form = {k: setting[k] for k in ("notify_type", "quota_warning_threshold", "webhook_url", "webhook_secret")}
    await walt.ok("PUT", "/api/user/setting", json=form)
    stored = json.loads((await m.User.get(id=walt.user_id)).setting)
    assert stored["webhook_secret"] == "s3cret-value"
    assert (stored["sidebar_modules"], stored["language"]) == (sidebar, "en")  # kept by the notification form
    # an admin may not show the system settings, root arranges nothing
    root = await admin.ok("GET", "/api/user/self")
    assert root["permissions"]["sidebar_settings"] is False and root["permissions"]["root"] is True
    await walt.close()


async def test_bad_preferences_are_a_400_naming_the_field(gateway: GatewayServer, admin: AdminClient) -> None:
    for body, field in (({"sidebar_modules": "not json"}, "sidebar_modules"),
                        ({"sidebar_modules": "[1]"}, "sidebar_modules"),
                        ({"sidebar_modules": "{}" + " " * 20_000}, "sidebar_modules"),
                        ({"language": "en<script>"}, "language"),
                        ({"language": 7}, "language")):
        resp = await admin.http.put("/api/user/self", json=body, headers={"New-Api-User": str(admin.user_id)})
        assert resp.status_code == 400 and field in resp.json()["message"], (body, resp.text)
    assert (await m.User.get(id=admin.user_id)).setting == ""  # nothing stored


async def test_saves_at_once_keep_each_others_keys(gateway: GatewayServer, admin: AdminClient) -> None:
    """The notification form, the sidebar and the language saved at the same moment (each a
    read, a change and a write of the one settings column): none is lost."""
    notify = {"notify_type": "email", "quota_warning_threshold": 100}
    for round_ in range(5):
        sidebar = json.dumps({"round": round_})
        language = ("en", "fr", "de", "ja", "ru")[round_]
        await asyncio.gather(admin.ok("PUT", "/api/user/self", json={"sidebar_modules": sidebar}),
                             admin.ok("PUT", "/api/user/self", json={"language": language}),
                             admin.ok("PUT", "/api/user/setting",
                                      json={**notify, "quota_warning_threshold": round_ + 1}))
        setting = json.loads((await admin.ok("GET", "/api/user/self"))["setting"])
        assert (setting["sidebar_modules"], setting["language"], setting["quota_warning_threshold"]) == \
            (sidebar, language, round_ + 1)
