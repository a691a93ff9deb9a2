"""Every option new-api knows is known here (issue 28, item 4): new-api's ``InitOptionMap``
(model/option.go), its registered settings (``general_setting.*``, ``console_setting.*``,
``claude.*`` …) and the keys its settings pages write (``HeaderNavModules``,
``SidebarModulesAdmin``, ``legal.*``, ``model_deployment.*``), at new-api commit 0664bb3f.
``GET /api/option/`` lists each (secret-named ones never), ``PUT /api/option/`` takes its
default back, refuses a bad value with a 400 naming it, and for a feature Faregate does not
have refuses anything but the default naming the feature. docs/management-api.md has the
table of how each is handled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from faregate.db import models as m
from faregate.state.absent_options import ABSENT_OPTIONS
from faregate.state.option_specs import SECRET_SUFFIXES, form_of
from faregate.testing.harness import AdminClient, GatewayServer

NEWAPI_OPTIONS: tuple[str, ...] = (
    "About", "AudioCompletionRatio", "AudioRatio", "AutoGroups", "AutomaticDisableChannelEnabled",
    "AutomaticDisableKeywords", "AutomaticDisableStatusCodes", "AutomaticEnableChannelEnabled",
    "AutomaticRetryStatusCodes", "CacheRatio", "ChannelDisableThreshold", "Chats", "CheckSensitiveEnabled",
    "CheckSensitiveOnPromptEnabled", "CompletionRatio", "CreateCacheRatio", "CreemApiKey", "CreemProducts",
    "CreemTestMode", "CreemWebhookSecret", "CustomCallbackAddress", "DataExportDefaultTime",
    "DataExportEnabled", "DataExportInterval", "DefaultCollapseSidebar", "DefaultUseAutoGroup",
    "DemoSiteEnabled", "DisplayInCurrencyEnabled", "DisplayTokenStatEnabled", "DrawingEnabled",
    "EmailAliasRestrictionEnabled", "EmailDomainRestrictionEnabled", "EmailDomainWhitelist",
    "EmailVerificationEnabled", "EpayId", "EpayKey", "ExposeRatioEnabled", "FileDownloadPermission",
    "FileUploadPermission", "Footer", "GitHubClientId", "GitHubClientSecret", "GitHubOAuthEnabled",
    "GroupGroupRatio", "GroupRatio", "HeaderNavModules", "HomePageContent", "ImageDownloadPermission",
    "ImageRatio", "ImageUploadPermission", "LinuxDOClientId", "LinuxDOClientSecret",
    "LinuxDOMinimumTrustLevel", "LinuxDOOAuthEnabled", "LogConsumeEnabled", "Logo", "MinTopUp",
    "MjAccountFilterEnabled", "MjActionCheckSuccessEnabled", "MjForwardUrlEnabled", "MjModeClearEnabled",
    "MjNotifyEnabled", "ModelPrice", "ModelRatio", "ModelRequestRateLimitCount",
    "ModelRequestRateLimitDurationMinutes", "ModelRequestRateLimitEnabled", "ModelRequestRateLimitGroup",
    "ModelRequestRateLimitSuccessCount", "Notice", "PasswordLoginEnabled", "PasswordRegisterEnabled",
    "PayAddress", "PayMethods", "PreConsumedQuota", "Price", "QuotaForInvitee", "QuotaForInviter",
    "QuotaForNewUser", "QuotaPerUnit", "QuotaRemindThreshold", "RegisterEnabled", "RetryTimes", "SMTPAccount",
    "SMTPForceAuthLogin", "SMTPFrom", "SMTPPort", "SMTPSSLEnabled", "SMTPServer", "SMTPToken",
    "SelfUseModeEnabled", "SensitiveWords", "ServerAddress", "SidebarModulesAdmin", "StopOnSensitiveEnabled",
    "StreamCacheQueueLength", "StripeApiSecret", "StripeMinTopUp", "StripePriceId",
    "StripePromotionCodesEnabled", "StripeUnitPrice", "StripeWebhookSecret", "SystemName", "TaskEnabled",
    "TelegramBotName", "TelegramBotToken", "TelegramOAuthEnabled", "TopUpLink", "TopupGroupRatio",
    "TurnstileCheckEnabled", "TurnstileSecretKey", "TurnstileSiteKey", "USDExchangeRate", "UserUsableGroups",
    "WaffoApiKey", "WaffoCurrency", "WaffoEnabled", "WaffoMerchantId", "WaffoMinTopUp", "WaffoNotifyUrl",
    "WaffoPayMethods", "WaffoPrivateKey", "WaffoPublicCert", "WaffoReturnUrl", "WaffoSandbox",
    "WaffoSandboxApiKey", "WaffoSandboxPrivateKey", "WaffoSandboxPublicCert", "WaffoSubscriptionReturnUrl",
    "WaffoUnitPrice", "WeChatAccountQRCodeImageURL", "WeChatAuthEnabled", "WeChatServerAddress",
    "WeChatServerToken", "WorkerAllowHttpImageRequestEnabled", "WorkerUrl", "WorkerValidKey",
    "channel_affinity_setting.default_ttl_seconds", "channel_affinity_setting.enabled",
    "channel_affinity_setting.max_entries", "channel_affinity_setting.rules",
    "channel_affinity_setting.switch_on_success", "checkin_setting.enabled", "checkin_setting.max_quota",
    "checkin_setting.min_quota", "claude.default_max_tokens", "claude.model_headers_settings",
    "claude.thinking_adapter_budget_tokens_percentage", "claude.thinking_adapter_enabled",
    "console_setting.announcements", "console_setting.announcements_enabled", "console_setting.api_info",
    "console_setting.api_info_enabled", "console_setting.faq", "console_setting.faq_enabled",
    "console_setting.uptime_kuma_enabled", "console_setting.uptime_kuma_groups", "discord.client_id",
    "discord.client_secret", "discord.enabled", "fetch_setting.allow_private_ip",
    "fetch_setting.allowed_ports", "fetch_setting.apply_ip_filter_for_domain",
    "fetch_setting.domain_filter_mode", "fetch_setting.domain_list", "fetch_setting.enable_ssrf_protection",
    "fetch_setting.ip_filter_mode", "fetch_setting.ip_list", "gemini.function_call_thought_signature_enabled",
    "gemini.remove_function_response_id_enabled", "gemini.safety_settings", "gemini.supported_imagine_models",
    "gemini.thinking_adapter_budget_tokens_percentage", "gemini.thinking_adapter_enabled",
    "gemini.version_settings", "general_setting.custom_currency_exchange_rate",
    "general_setting.custom_currency_symbol", "general_setting.docs_link",
    "general_setting.ping_interval_enabled", "general_setting.ping_interval_seconds",
    "general_setting.quota_display_type", "global.chat_completions_to_responses_policy",
    "global.pass_through_request_enabled", "global.thinking_model_blacklist",
    "grok.violation_deduction_amount", "grok.violation_deduction_enabled",
    "group_ratio_setting.group_group_ratio", "group_ratio_setting.group_ratio",
    "group_ratio_setting.group_special_usable_group", "legal.privacy_policy", "legal.user_agreement",
    "model_deployment.ionet.api_key", "model_deployment.ionet.enabled",
    "monitor_setting.auto_test_channel_enabled", "monitor_setting.auto_test_channel_minutes",
    "oidc.authorization_endpoint", "oidc.client_id", "oidc.client_secret", "oidc.enabled",
    "oidc.token_endpoint", "oidc.user_info_endpoint", "oidc.well_known", "passkey.allow_insecure_origin",
    "passkey.attachment_preference", "passkey.enabled", "passkey.origins", "passkey.rp_display_name",
    "passkey.rp_id", "passkey.user_verification", "payment_setting.amount_discount",
    "payment_setting.amount_options", "performance_setting.disk_cache_enabled",
    "performance_setting.disk_cache_max_size_mb", "performance_setting.disk_cache_path",
    "performance_setting.disk_cache_threshold_mb", "performance_setting.monitor_cpu_threshold",
    "performance_setting.monitor_disk_threshold", "performance_setting.monitor_enabled",
    "performance_setting.monitor_memory_threshold", "quota_setting.enable_free_model_pre_consume",
    "qwen.sync_image_models", "token_setting.max_user_tokens",
)

OURS = list(NEWAPI_OPTIONS)


async def _put(admin: AdminClient, key: str, value: Any) -> httpx.Response:
    return await admin.http.put("/api/option/", json={"key": key, "value": value},
                                headers={"New-Api-User": str(admin.user_id)})


def _schema(gateway: GatewayServer) -> dict[str, dict[str, Any]]:
    """Every known option's form, from the gateway's registry (``GET /api/option/schema`` shows
    the same for the options that work, not those of missing features)."""
    out: dict[str, dict[str, Any]] = {}
    for key, spec in gateway.gateway.option_registry.specs.items():
        form = form_of(spec.parse, spec.default)
        out[key] = {"kind": form.kind, "default": spec.default, "description": spec.description,
                    "minimum": form.minimum, "maximum": form.maximum, "max_length": form.max_length}
    return out


async def _unknown(gateway: GatewayServer, admin: AdminClient, names: list[str]) -> list[str]:
    schema = _schema(gateway)
    listed = {item["key"] for item in await admin.ok("GET", "/api/option/")}
    return [name for name in names if name not in schema or not schema[name]["description"]
            or (name in listed) is name.endswith(SECRET_SUFFIXES)]


async def test_every_newapi_option_is_known_and_listed(gateway: GatewayServer, admin: AdminClient) -> None:
    assert await _unknown(gateway, admin, OURS) == []
    # the options that work have a form; those of missing features, only their default, have none
    forms = {item["key"] for item in await admin.ok("GET", "/api/option/schema")}
    assert {name for name in OURS if name not in forms} == {spec.key for spec in ABSENT_OPTIONS}


async def test_each_default_is_accepted_back(gateway: GatewayServer, admin: AdminClient) -> None:
    """What the console sends back unchanged (a listed value, or an empty secret) is taken."""
    schema = _schema(gateway)
    listed = {item["key"]: item["value"] for item in await admin.ok("GET", "/api/option/")}
    for name in OURS:
        value = listed.get(name, schema[name]["default"])
        resp = await _put(admin, name, value)
        assert resp.status_code == 200 and resp.json()["success"], f"{name}={value!r}: {resp.text}"


def _bad(item: dict[str, Any]) -> str | None:
    """A value the option's declared form refuses (None for free text)."""
    kind = item["kind"]
    if kind == "boolean":
        return "maybe"
    if kind in ("integer", "number"):
        return "many"
    if kind == "choice":
        return "no-such-choice"
    if kind == "json":
        return "{not json"
    return None


async def test_a_bad_value_is_a_400_naming_the_option(gateway: GatewayServer, admin: AdminClient) -> None:
    schema = _schema(gateway)
    for name in OURS:
        item = schema[name]
        bad = _bad(item)
        if bad is None:
            if item.get("max_length") is None:
                continue  # free text a parser of its own bounds (a plugin's)
            bad = "x" * (item["max_length"] + 1)
        resp = await _put(admin, name, bad)
        assert resp.status_code == 400, f"{name}={bad[:40]!r}: {resp.text}"
        assert name in resp.json()["message"]
    assert not await m.Option.filter(key__in=OURS).exists()


def _other_value(item: dict[str, Any]) -> Any:
    """A value of the option's form other than its default."""
    kind, default = item["kind"], item["default"]
    if kind == "boolean":
        return default != "true"
    if kind == "integer":
        value = int(default) + 1
        return value if item.get("maximum") is None or value <= item["maximum"] else int(default) - 1
    if kind == "number":
        return (float(item["minimum"]) + float(item["maximum"])) / 3
    if kind == "json":
        return '["something"]' if default.startswith("[") else '{"something": 1}'
    return "something"


async def test_a_missing_feature_refuses_anything_but_its_default(gateway: GatewayServer,
                                                                  admin: AdminClient) -> None:
    schema = _schema(gateway)
    for spec in ABSENT_OPTIONS:
        resp = await _put(admin, spec.key, _other_value(schema[spec.key]))
        assert resp.status_code == 400, f"{spec.key}: {resp.text}"
        message = resp.json()["message"]
        assert spec.key in message and "Faregate has no" in message, message
        assert not await m.Option.filter(key=spec.key).exists()
        assert (await _put(admin, spec.key, spec.default)).json()["success"], spec.key


async def test_the_sidebar_hides_the_missing_features_pages(admin: AdminClient) -> None:
    async def sidebar() -> dict[str, Any]:
        from faregate import jsonutil
        status = (await admin.http.get("/api/status")).json()["data"]
        parsed: dict[str, Any] = jsonutil.loads(status["SidebarModulesAdmin"])
        return parsed

    hidden = {("console", "midjourney"), ("console", "task"), ("admin", "deployment"), ("admin", "subscription")}
    default = await sidebar()
    assert all(default[section][module] is False for section, module in hidden)
    assert default["admin"]["channel"] is True and default["console"]["log"] is True
    # new-api's console fills in what a saved value leaves out as shown: here those pages stay off
    await admin.set_option("SidebarModulesAdmin", '{"console": {"enabled": true, "log": false}}')
    saved = await sidebar()
    assert saved["console"] == {"enabled": True, "log": False, "midjourney": False, "task": False}
    assert saved["admin"] == {"deployment": False, "subscription": False}
    resp = await _put(admin, "SidebarModulesAdmin", '{"console": {"enabled": true, "midjourney": true}}')
    assert resp.status_code == 400 and "Midjourney" in resp.json()["message"]
    resp = await _put(admin, "SidebarModulesAdmin", '{"admin": {"subscription": true}}')
    assert resp.status_code == 400 and "subscriptions" in resp.json()["message"]


def test_the_docs_say_how_each_option_is_handled() -> None:
    docs = (Path(__file__).parents[1] / "docs" / "management-api.md").read_text()
    table = docs[docs.index("## new-api's options, one by one"):]
    assert [name for name in NEWAPI_OPTIONS if f"`{name}`" not in table] == []


async def test_a_refused_value_stored_behind_the_api_is_not_in_force(admin: AdminClient) -> None:
    """A new-api table copied by hand (DrawingEnabled on): the listing and the status say
    what is in force, the default."""
    await m.Option.create(key="DrawingEnabled", value="true")
    await m.Option.create(key="console_setting.faq", value="not json")
    listed = {item["key"]: item["value"] for item in await admin.ok("GET", "/api/option/")}
    assert (listed["DrawingEnabled"], listed["console_setting.faq"]) == ("false", "")
