"""``GET /api/status``: what new-api's web console (and its scripts) read before anything
else, with every field of new-api's GetStatus, its JSON types and its names (issue 28): the
console stores the answer and reads the logo, footer, chat links, sidebar and header
modules, dashboard panels and sign-in methods from it; a missing field shows as
"undefined" or an error toast on every page. Faregate's own fields (``database_type``,
``formats``, ``telegram_bot_id``, ``min_topup``) come on top."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quart import Blueprint, Response, current_app
from quart_schema import document_response

from faregate import __version__, jsonutil
from faregate.db import models as m
from faregate.management import missing_methods
from faregate.management.common import gateway, ok, public
from faregate.management.openapi import Ok, Shape

blueprint = Blueprint("status", __name__)


class StatusData(Shape):
    version: str
    start_time: int
    system_name: str
    logo: str
    footer_html: str
    server_address: str
    top_up_link: str
    docs_link: str
    quota_per_unit: float
    display_in_currency: bool
    quota_display_type: str
    custom_currency_symbol: str
    custom_currency_exchange_rate: float
    usd_exchange_rate: float
    price: float
    stripe_unit_price: float
    min_topup: int
    default_use_auto_group: bool
    setup: bool
    self_use_mode_enabled: bool
    demo_site_enabled: bool
    enable_batch_update: bool
    enable_drawing: bool
    enable_task: bool
    enable_data_export: bool
    data_export_default_time: str
    default_collapse_sidebar: bool
    mj_notify_enabled: bool
    chats: list[dict[str, str]]
    api_info_enabled: bool
    uptime_kuma_enabled: bool
    announcements_enabled: bool
    faq_enabled: bool
    api_info: list[dict[str, Any]] | None = None
    announcements: list[dict[str, Any]] | None = None
    faq: list[dict[str, Any]] | None = None
    HeaderNavModules: str
    SidebarModulesAdmin: str
    user_agreement_enabled: bool
    privacy_policy_enabled: bool
    checkin_enabled: bool
    database_type: str
    formats: list[str]
    # how one may sign in and pay, as new-api's UI reads them: false / empty when the method's
    # plugin is not installed (its options are then not declared)
    email_verification: bool
    github_oauth: bool
    github_client_id: str
    discord_oauth: bool
    discord_client_id: str
    linuxdo_oauth: bool
    linuxdo_client_id: str
    linuxdo_minimum_trust_level: int
    oidc_enabled: bool
    oidc_client_id: str
    oidc_authorization_endpoint: str
    telegram_oauth: bool
    telegram_bot_name: str
    telegram_bot_id: str
    wechat_login: bool
    wechat_qrcode: str
    passkey_login: bool
    passkey_display_name: str
    passkey_rp_id: str
    passkey_origins: str
    passkey_allow_insecure: bool
    passkey_user_verification: str
    passkey_attachment: str
    turnstile_check: bool
    turnstile_site_key: str


@blueprint.get("/api/status")
@public
@document_response(Ok[StatusData])
async def status() -> Response:
    gw = gateway()
    options = gw.snapshot.options
    values = options.values
    display = values["general_setting.quota_display_type"]
    data: dict[str, Any] = {
        "version": __version__,
        "start_time": gw.started_at,
        "system_name": options.system_name,
        "logo": values["Logo"],
        "footer_html": values["Footer"],
        "top_up_link": values["TopUpLink"],
        "docs_link": values["general_setting.docs_link"],
        "quota_per_unit": json_number(options.quota_per_unit),
        # new-api: money unless the display type is TOKENS (older UIs read only this flag)
        "display_in_currency": bool(values["DisplayInCurrencyEnabled"]) and display != "TOKENS",
        "quota_display_type": display,
        "custom_currency_symbol": values["general_setting.custom_currency_symbol"],
        "custom_currency_exchange_rate": json_number(values["general_setting.custom_currency_exchange_rate"]),
        "usd_exchange_rate": json_number(values["USDExchangeRate"]),
        "default_use_auto_group": values["DefaultUseAutoGroup"],
        "setup": await m.Setup.exists(),
        "self_use_mode_enabled": options.self_use_mode,
        "demo_site_enabled": values["DemoSiteEnabled"],
        "enable_batch_update": False,  # new-api's BATCH_UPDATE_ENABLED: Faregate settles each request itself
        "enable_drawing": values["DrawingEnabled"],  # always false: no Midjourney (state.absent_options)
        "enable_task": values["TaskEnabled"],  # always false: no async tasks
        # DataExportEnabled turns the dashboard (/api/data/) off (management/dashboard_options.py)
        "enable_data_export": values.get("DataExportEnabled", True) is not False,
        "data_export_default_time": values["DataExportDefaultTime"],
        "default_collapse_sidebar": values["DefaultCollapseSidebar"],
        "mj_notify_enabled": values["MjNotifyEnabled"],
        "chats": values["Chats"],
        **_console_panels(values),
        # new-api sends its stored text; here the sidebar's parsed value, the missing features' pages off
        "HeaderNavModules": jsonutil.dumps_str(values["HeaderNavModules"]) if values["HeaderNavModules"] else "",
        "SidebarModulesAdmin": jsonutil.dumps_str(values["SidebarModulesAdmin"]),
        "user_agreement_enabled": bool(values["legal.user_agreement"] or values["UserAgreement"]),
        "privacy_policy_enabled": bool(values["legal.privacy_policy"] or values["PrivacyPolicy"]),
        "database_type": gw.backend.name,
        "formats": sorted(gw.formats),
        **_sign_in_and_payment(values, missing_methods.absent(current_app)),
    }
    return ok(data)


def _console_panels(values: Mapping[str, Any]) -> dict[str, Any]:
    """The dashboard's panel switches, and each enabled panel's items (new-api sends the
    items only when the panel is on)."""
    out: dict[str, Any] = {"uptime_kuma_enabled": values["console_setting.uptime_kuma_enabled"]}
    for panel in ("api_info", "announcements", "faq"):
        enabled = bool(values[f"console_setting.{panel}_enabled"])
        out[f"{panel}_enabled"] = enabled
        if enabled:
            out[panel] = values[f"console_setting.{panel}"]
    return out


def _sign_in_and_payment(values: Mapping[str, Any], absent: frozenset[str]) -> dict[str, Any]:
    """new-api's status fields of the sign-in methods and payments, from their plugins'
    options where those are installed (``absent``: the sign-in plugins that are not). Only
    public values: client ids, never secrets."""
    def on(key: str) -> bool:
        return values.get(key) is True

    def text(key: str) -> str:
        value = values.get(key)
        return value if isinstance(value, str) else ""

    def number(key: str) -> float:
        value = values.get(key)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0

    return {
        # the option is the core's, but no code can be sent without the email plugin: new-api's UI
        # would ask for one nobody can get
        "email_verification": on("EmailVerificationEnabled") and "faregate-auth-email" not in absent,
        "github_oauth": on("GitHubOAuthEnabled"), "github_client_id": text("GitHubClientId"),
        "discord_oauth": on("discord.enabled"), "discord_client_id": text("discord.client_id"),
        "linuxdo_oauth": on("LinuxDOOAuthEnabled"), "linuxdo_client_id": text("LinuxDOClientId"),
        "linuxdo_minimum_trust_level": int(number("LinuxDOMinimumTrustLevel")),
        "oidc_enabled": on("oidc.enabled"), "oidc_client_id": text("oidc.client_id"),
        "oidc_authorization_endpoint": text("oidc.authorization_endpoint"),
        "telegram_oauth": on("TelegramOAuthEnabled"), "telegram_bot_name": text("TelegramBotName"),
        "telegram_bot_id": _bot_id(text("TelegramBotToken")),
        "wechat_login": on("WeChatAuthEnabled"), "wechat_qrcode": text("WeChatAccountQRCodeImageURL"),
        "passkey_login": on("passkey.enabled"),
        "passkey_display_name": text("passkey.rp_display_name") or text("SystemName"),
        "passkey_rp_id": text("passkey.rp_id"), "passkey_origins": _origins(values.get("passkey.origins")),
        "passkey_allow_insecure": on("passkey.allow_insecure_origin"),
        "passkey_user_verification": text("passkey.user_verification") or "preferred",
        "passkey_attachment": text("passkey.attachment_preference"),
        "turnstile_check": False, "turnstile_site_key": "",  # Faregate has no Turnstile check
        "server_address": text("ServerAddress"),
        "price": number("Price"), "stripe_unit_price": number("StripeUnitPrice"), "min_topup": int(number("MinTopUp")),
        "checkin_enabled": on("checkin_setting.enabled"),
    }


def _origins(value: Any) -> str:
    """new-api sends the passkey origins as its comma-separated text."""
    if isinstance(value, list | tuple):
        return ",".join(str(origin) for origin in value)
    return value if isinstance(value, str) else ""


def _bot_id(token: str) -> str:
    """The bot's numeric id, the part of its token before the colon: public (it is the bot's
    Telegram user id), and what Telegram's script-free login (oauth.telegram.org/auth?bot_id=)
    needs; the secret part after the colon is never shown."""
    bot_id, colon, _ = token.partition(":")
    return bot_id if colon and bot_id.isdigit() and len(bot_id) <= 20 else ""


def json_number(value: float) -> float | int:
    """500000.0 as 500000, as new-api's JSON shows it."""
    return int(value) if float(value).is_integer() else value
