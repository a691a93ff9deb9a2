"""Every management body takes what new-api's own console sends (issue 28, item 6): its forms
start from initial values of their own (the model form's ``vendor`` and ``vendor_icon`` beside
``vendor_id``) and, on edit, send back the whole object they loaded. Those read-only fields
are accepted and ignored, as docs/management-api.md promises; each body below is built the
way the console at new-api 0664bb3f builds it (web/src/components/table/*/modals/*.jsx)."""

from __future__ import annotations

import json
from typing import Any

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer


async def test_the_model_form(gateway: GatewayServer, admin: AdminClient) -> None:
    """EditModelModal: ``getInitValues()`` holds ``vendor`` and ``vendor_icon``; submit turns
    tags into text and the switches into 0/1; edit merges the loaded row into the initial values."""
    vendor = await admin.ok("POST", "/api/vendors/", json={"name": "Acme", "description": "", "icon": "",
                                                           "status": 1})
    init = {"model_name": "acme-1", "description": "", "icon": "", "tags": "", "vendor": "", "vendor_icon": "",
            "endpoints": "", "name_rule": 0, "status": 1, "sync_official": 1}
    created = await admin.ok("POST", "/api/models/", json={**init, "vendor_id": vendor["id"], "vendor": "Acme",
                                                           "vendor_icon": "Acme.Color"})
    assert (created["model_name"], created["vendor_id"]) == ("acme-1", vendor["id"])
    loaded = await admin.ok("GET", f"/api/models/{created['id']}")
    edited = await admin.ok("PUT", "/api/models/", json={**init, **loaded, "description": "the first",
                                                         "id": created["id"]})
    assert edited["description"] == "the first" and "vendor" not in edited
    row = await m.ModelMeta.get(id=created["id"])
    assert (row.description, row.vendor_id) == ("the first", vendor["id"])
    # a field neither the console nor the API knows is still a typo: refused
    typo = await admin.http.post("/api/models/", json={**init, "model_name": "acme-2", "vendr": "x"},
                                 headers={"New-Api-User": str(admin.user_id)})
    assert typo.status_code == 400 and "vendr" in typo.json()["message"]


async def test_the_vendor_form(gateway: GatewayServer, admin: AdminClient) -> None:
    """EditVendorModal: ``{name, description, icon, status}``; edit sends the loaded row back."""
    created = await admin.ok("POST", "/api/vendors/", json={"name": "V", "description": "", "icon": "", "status": 1})
    loaded = await admin.ok("GET", f"/api/vendors/{created['id']}")
    assert (await admin.ok("PUT", "/api/vendors/", json={**loaded, "description": "d"}))["description"] == "d"


async def test_the_token_form(gateway: GatewayServer, admin: AdminClient) -> None:
    """EditTokenModal: the initial values (``cross_group_retry`` among them) on add; on edit the
    loaded key merged into them, ``tokenCount`` taken out."""
    init = {"name": "", "remain_quota": 0, "expired_time": -1, "unlimited_quota": True,
            "model_limits_enabled": False, "model_limits": "", "allow_ips": "", "group": "",
            "cross_group_retry": False}
    created = await admin.ok("POST", "/api/token/", json={**init, "name": "k"})
    loaded = await admin.ok("GET", f"/api/token/{created['id']}")
    assert (await admin.ok("PUT", "/api/token/", json={**init, **loaded, "name": "k2"}))["name"] == "k2"


async def test_the_redemption_form(gateway: GatewayServer, admin: AdminClient) -> None:
    """EditRedemptionModal: ``{name, quota, count, expired_time}``; edit sends the loaded code with
    ``count`` beside it."""
    init = {"name": "gift", "quota": 100000, "count": 1, "expired_time": 0}
    assert len(await admin.ok("POST", "/api/redemption/", json=init)) == 1
    code_id = (await admin.ok("GET", "/api/redemption/"))["items"][0]["id"]
    loaded = await admin.ok("GET", f"/api/redemption/{code_id}")
    edited = await admin.ok("PUT", "/api/redemption/", json={**init, **loaded, "name": "gift2", "count": 1})
    assert edited["name"] == "gift2"


async def test_the_user_forms(gateway: GatewayServer, admin: AdminClient) -> None:
    """AddUserModal ``{username, display_name, password, remark}``; EditUserModal: the loaded row
    (``/api/user/{id}``, or ``/api/user/self`` for one's own) merged into its initial values."""
    created = await admin.ok("POST", "/api/user/", json={"username": "ula", "display_name": "", "password":
                                                         ROOT_PASSWORD, "remark": ""})
    init = {"username": "", "display_name": "", "password": "", "github_id": "", "oidc_id": "", "discord_id": "",
            "wechat_id": "", "telegram_id": "", "linux_do_id": "", "email": "", "quota": 0, "group": "default",
            "remark": ""}
    loaded = await admin.ok("GET", f"/api/user/{created['id']}")
    edited = await admin.ok("PUT", "/api/user/", json={**init, **loaded, "password": "", "remark": "r",
                                                       "id": created["id"]})
    assert edited["remark"] == "r"
    me = await admin.ok("GET", "/api/user/self")
    assert (await admin.ok("PUT", "/api/user/self", json={**init, **me, "password": "", "display_name": "Root"}))[
        "display_name"] == "Root"


async def test_the_channel_form(gateway: GatewayServer, admin: AdminClient) -> None:
    """EditChannelModal: its inputs (``originInputs`` with the extra-setting fields taken out,
    ``setting`` and ``settings`` as JSON text, ``groups`` beside ``group``); on edit the loaded
    channel merged in, ``key`` empty (kept) and ``key_mode`` for a multi-key channel."""
    setting = json.dumps({"force_format": False, "thinking_to_content": False, "proxy": "",
                          "pass_through_body_enabled": False, "system_prompt": "", "system_prompt_override": False})
    settings = json.dumps({"allow_service_tier": False, "disable_store": False, "allow_safety_identifier": False,
                           "allow_include_obfuscation": False, "upstream_model_update_check_enabled": False,
                           "upstream_model_update_auto_sync_enabled": False,
                           "upstream_model_update_ignored_models": [],
                           "upstream_model_update_last_detected_models": [],
                           "upstream_model_update_last_check_time": 0})
    form: dict[str, Any] = {"name": "c", "type": 1, "key": "sk-upstream-1", "openai_organization": "",
                            "max_input_tokens": 0, "base_url": "http://127.0.0.1:9", "other": "", "model_mapping": "",
                            "param_override": "", "status_code_mapping": "", "models": "m1", "auto_ban": 1,
                            "test_model": "", "groups": ["default"], "group": "default", "priority": 0, "weight": 0,
                            "tag": "", "multi_key_mode": "random", "setting": setting, "settings": settings}
    channel_id = await admin.ok("POST", "/api/channel/", json={"mode": "single", "channel": form})
    loaded = await admin.ok("GET", f"/api/channel/{channel_id}")
    edited = await admin.ok("PUT", "/api/channel/", json={**form, **loaded, "key": "", "name": "c2",
                                                          "setting": setting, "settings": settings,
                                                          "azure_responses_version": "", "id": channel_id})
    assert edited["name"] == "c2"


async def test_the_notification_form(gateway: GatewayServer, admin: AdminClient) -> None:
    """PersonalSetting's ``saveNotificationSettings``: every field, the secrets as read."""
    form = {"notify_type": "email", "quota_warning_threshold": 500000.0, "webhook_url": "", "webhook_secret": "",
            "notification_email": "", "bark_url": "", "gotify_url": "", "gotify_token": "", "gotify_priority": 5,
            "upstream_model_update_notify_enabled": False, "accept_unset_model_ratio_model": False,
            "record_ip_log": False}
    assert (await admin.ok("PUT", "/api/user/setting", json=form))["quota_warning_threshold"] == 500000.0
