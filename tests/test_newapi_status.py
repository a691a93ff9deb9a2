"""``GET /api/status`` sends every field new-api's GetStatus sends (controller/misc.go at
new-api commit 0664bb3f), with its JSON type (issue 28, item 1): new-api's console stores the
answer and reads its logo, footer, chat links, modules and panels from it. The options
that only drive the console reach it: a value written with ``PUT /api/option/`` comes back
here (or at the page new-api's console reads it from)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from faregate import jsonutil
from faregate.testing.harness import AdminClient, GatewayServer

#: new-api's GetStatus fields and their JSON types ("number": an int or a float)
NEWAPI_STATUS_FIELDS: dict[str, str] = {
    "version": "string", "start_time": "number", "email_verification": "boolean", "github_oauth": "boolean",
    "github_client_id": "string", "discord_oauth": "boolean", "discord_client_id": "string",
    "linuxdo_oauth": "boolean", "linuxdo_client_id": "string", "linuxdo_minimum_trust_level": "number",
    "telegram_oauth": "boolean", "telegram_bot_name": "string", "system_name": "string", "logo": "string",
    "footer_html": "string", "wechat_qrcode": "string", "wechat_login": "boolean", "server_address": "string",
    "turnstile_check": "boolean", "turnstile_site_key": "string", "top_up_link": "string", "docs_link": "string",
    "quota_per_unit": "number", "display_in_currency": "boolean", "quota_display_type": "string",
    "custom_currency_symbol": "string", "custom_currency_exchange_rate": "number",
    "enable_batch_update": "boolean", "enable_drawing": "boolean", "enable_task": "boolean",
    "enable_data_export": "boolean", "data_export_default_time": "string", "default_collapse_sidebar": "boolean",
    "mj_notify_enabled": "boolean", "chats": "array", "demo_site_enabled": "boolean",
    "self_use_mode_enabled": "boolean", "default_use_auto_group": "boolean", "usd_exchange_rate": "number",
    "price": "number", "stripe_unit_price": "number", "api_info_enabled": "boolean",
    "uptime_kuma_enabled": "boolean", "announcements_enabled": "boolean", "faq_enabled": "boolean",
    "HeaderNavModules": "string", "SidebarModulesAdmin": "string", "oidc_enabled": "boolean",
    "oidc_client_id": "string", "oidc_authorization_endpoint": "string", "passkey_login": "boolean",
    "passkey_display_name": "string", "passkey_rp_id": "string", "passkey_origins": "string",
    "passkey_allow_insecure": "boolean", "passkey_user_verification": "string", "passkey_attachment": "string",
    "setup": "boolean", "user_agreement_enabled": "boolean", "privacy_policy_enabled": "boolean",
    "checkin_enabled": "boolean",
    # sent only while their panel is on (on by default)
    "api_info": "array", "announcements": "array", "faq": "array",
}
#: new-api sends custom_oauth_providers only when some exist; Faregate has no custom OAuth providers
NOT_SENT = ("custom_oauth_providers",)

_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,), "number": (int, float),
                                       "array": (list,)}


def _typed(value: Any, kind: str) -> bool:
    return isinstance(value, _TYPES[kind]) and not (kind == "number" and isinstance(value, bool))


async def _status(gateway: GatewayServer) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        data: dict[str, Any] = (await http.get("/api/status")).json()["data"]
    return data


async def test_every_field_of_newapi_is_sent_with_its_type(gateway: GatewayServer) -> None:
    data = await _status(gateway)
    wrong = {name: data.get(name, "<missing>") for name, kind in NEWAPI_STATUS_FIELDS.items()
             if not _typed(data.get(name), kind)}
    assert wrong == {}
    assert not any(name in data for name in NOT_SENT)
    # the pages of features Faregate does not have stay hidden
    assert (data["enable_drawing"], data["enable_task"], data["turnstile_check"]) == (False, False, False)
    assert data["enable_data_export"] is True and data["data_export_default_time"] == "hour"
    assert (data["chats"], data["api_info"], data["announcements"], data["faq"]) == ([], [], [], [])


async def test_the_console_options_reach_the_status(gateway: GatewayServer, admin: AdminClient) -> None:
    chats = [{"Cherry Studio": "cherrystudio://providers/api-keys?v=1&data={cherryConfig}"}]
    api_info = [{"url": "https://api.example.com", "route": "main", "description": "the main line",
                 "color": "blue"}]
    news = [{"content": "hello", "publishDate": "2026-01-02T03:04:05Z", "type": "success"}]
    faq = [{"question": "why?", "answer": "because"}]
    header = {"home": True, "console": True, "pricing": {"enabled": True, "requireAuth": True}, "docs": False,
              "about": True}
    for key, value in (("Logo", "https://example.com/logo.png"), ("Footer", "<b>the footer</b>"),
                       ("Chats", chats), ("TopUpLink", "https://shop.example.com/buy"),
                       ("general_setting.docs_link", "https://docs.example.com"), ("DefaultCollapseSidebar", True),
                       ("DataExportDefaultTime", "week"), ("HeaderNavModules", header),
                       ("console_setting.api_info", api_info), ("console_setting.announcements", news),
                       ("console_setting.faq", faq), ("console_setting.uptime_kuma_enabled", False),
                       ("legal.user_agreement", "# terms")):
        await admin.set_option(key, value)
    data = await _status(gateway)
    assert (data["logo"], data["footer_html"], data["top_up_link"], data["docs_link"]) == (
        "https://example.com/logo.png", "<b>the footer</b>", "https://shop.example.com/buy",
        "https://docs.example.com")
    assert (data["chats"], data["api_info"], data["announcements"], data["faq"]) == (chats, api_info, news, faq)
    assert (data["default_collapse_sidebar"], data["data_export_default_time"]) == (True, "week")
    assert jsonutil.loads(data["HeaderNavModules"]) == header
    assert (data["uptime_kuma_enabled"], data["user_agreement_enabled"], data["privacy_policy_enabled"]) == (
        False, True, False)
    assert await admin.ok("GET", "/api/user-agreement") == "# terms"
    # a panel switched off: its switch says so and its items are not sent (new-api's way)
    await admin.set_option("console_setting.faq_enabled", False)
    data = await _status(gateway)
    assert data["faq_enabled"] is False and "faq" not in data


async def test_the_old_legal_names_still_serve_the_pages(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.set_option("PrivacyPolicy", "the policy")
    assert await admin.ok("GET", "/api/privacy-policy") == "the policy"
    assert (await _status(gateway))["privacy_policy_enabled"] is True
    await admin.set_option("legal.privacy_policy", "the new policy")
    assert await admin.ok("GET", "/api/privacy-policy") == "the new policy"


async def test_bad_console_values_are_refused_by_name(admin: AdminClient) -> None:
    for key, value in (("Chats", '[{"a": 1}]'), ("Chats", "{}"), ("TopUpLink", "javascript:alert(1)"),
                       ("console_setting.api_info", '[{"url": "https://a.example", "route": "r"}]'),
                       ("console_setting.announcements", '[{"content": "x", "publishDate": "yesterday"}]'),
                       ("console_setting.announcements",
                        '[{"content": "x", "publishDate": "2026-01-02T03:04:05Z", "type": "loud"}]'),
                       ("console_setting.faq", '[{"question": "q"}]'), ("HeaderNavModules", '{"chat": true}'),
                       ("DataExportDefaultTime", "month"), ("SidebarModulesAdmin", '{"nowhere": {}}')):
        resp = await admin.http.put("/api/option/", json={"key": key, "value": value},
                                    headers={"New-Api-User": str(admin.user_id)})
        assert resp.status_code == 400, f"{key}={value}: {resp.text}"
        assert key in resp.json()["message"]


def test_the_docs_list_each_status_field() -> None:
    docs = (Path(__file__).parents[1] / "docs" / "management-api.md").read_text()
    table = docs[docs.index("## `GET /api/status` against new-api's"):]
    assert [name for name in (*NEWAPI_STATUS_FIELDS, *NOT_SENT) if f"`{name}`" not in table] == []
