"""Runtime options (new-api's options table): typed accessors with new-api's defaults,
parsed once per change rather than per request."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from faregate import jsonutil
from faregate.accounts.options import ACCOUNT_OPTIONS
from faregate.billing import groups, output_limits, ratios
from faregate.billing.pricing import CACHE_WRITE_1H_MULTIPLIER
from faregate.limits.options import LIMIT_OPTIONS, LimitOptions
from faregate.net.urls import url_form_problem
from faregate.payments.money import PAYMENT_OPTIONS
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionRegistry, OptionSpec

if TYPE_CHECKING:
    from faregate.errors import GatewayError

log = logging.getLogger("faregate")

QUOTA_PER_UNIT_DEFAULT = 500_000

# new-api's ShouldDisableChannel: codes and types that say the upstream key is dead
DISABLE_CODES = frozenset({"invalid_api_key", "account_deactivated", "billing_not_active", "Arrearage"})
DISABLE_TYPES = frozenset({"insufficient_quota", "insufficient_user_quota", "authentication_error",
                           "permission_error", "forbidden"})
DEFAULT_DISABLE_KEYWORDS = (
    "Your credit balance is too low", "This organization has been disabled.", "You exceeded your current quota",
    "Permission denied", "The security token included in the request is invalid", "Operation not allowed",
    "Your account is not authorized",
)

DEFAULT_RETRY_STATUS = "100-199,300-399,401-407,409-499,500-503,505-523,525-599"


_SLUG = re.compile(r"[A-Za-z0-9_-]{1,100}")


def _http_url(max_len: int) -> specs.Parser:
    """An http(s) URL with a host and no credentials, query or fragment: a place the gateway
    fetches from (through the guarded fetcher, which checks the address at each fetch)."""
    def parse(value: str) -> str:
        value = value.strip()
        if not value or len(value) > max_len:
            raise ValueError(f"expected an http(s) URL of at most {max_len} characters")
        problem = url_form_problem(value)
        if problem is not None:
            raise ValueError(f"the URL {problem}")
        return value.rstrip("/")
    return parse


def _uptime_kuma_groups(value: str) -> list[dict[str, str]]:
    """new-api's ``console_setting.uptime_kuma_groups``: a JSON array of at most 20
    ``{categoryName, url, slug, description}``, category names unique."""
    if not value.strip():
        return []
    try:
        items = jsonutil.loads(value)
    except jsonutil.JSONDecodeError:
        raise ValueError("expected a JSON array of groups") from None
    if not isinstance(items, list) or len(items) > 20:
        raise ValueError("expected a JSON array of at most 20 groups")
    base_url = _http_url(500)
    groups: list[dict[str, str]] = []
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise ValueError(f"group {n}: expected an object")
        name, slug, url, about = (item.get(k) for k in ("categoryName", "slug", "url", "description"))
        if not isinstance(name, str) or not 1 <= len(name) <= 50 or any(g["categoryName"] == name for g in groups):
            raise ValueError(f"group {n}: categoryName must be 1 to 50 characters and unique")
        if not isinstance(slug, str) or not _SLUG.fullmatch(slug):
            raise ValueError(f"group {n}: slug must be 1 to 100 letters, digits, _ or -")
        if not isinstance(about, str | None) or len(about or "") > 200:
            raise ValueError(f"group {n}: description must be a string of at most 200 characters")
        try:
            link = base_url(url if isinstance(url, str) else "")
        except ValueError as exc:
            raise ValueError(f"group {n}: url: {exc}") from None
        groups.append({"categoryName": name, "url": link, "slug": slug, "description": about or ""})
    return groups


CORE_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("QuotaPerUnit", str(QUOTA_PER_UNIT_DEFAULT), "Quota units per US dollar.", specs.number(1, 1e12)),
    OptionSpec("RetryTimes", "0", "Further channels tried after a failed attempt.", specs.integer(0, 10)),
    # The built-in price tables (new-api's, as data with its provenance: faregate/billing/default_prices.json)
    # are the price options' defaults; a stored option replaces its whole table, as new-api's does.
    OptionSpec("ModelRatio", ratios.default_json("ModelRatio"),
               "Price per model: ratio 1 = $2 per million input tokens. The value is the whole table (a model "
               "left out is not priced); POST /api/option/rest_model_ratio puts back the built-in one.",
               specs.ratio_map()),
    OptionSpec("CompletionRatio", ratios.default_json("CompletionRatio"),
               "Output token price as a multiple of the input price, per model (the whole table); a model it "
               "does not name gets its family's ratio (new-api's rules), else 1.", specs.ratio_map()),
    OptionSpec("ModelPrice", ratios.default_json("ModelPrice"),
               "Fixed price per call in US dollars, per model, instead of ratios (the whole table); audio "
               "transcriptions and translations: per minute of audio.", specs.ratio_map(1e4)),
    OptionSpec("CacheRatio", ratios.default_json("CacheRatio"),
               "Price of cache-read input tokens as a multiple of input, per model (the whole table; else 1).",
               specs.ratio_map()),
    OptionSpec("CreateCacheRatio", ratios.default_json("CreateCacheRatio"),
               "Price of cache-write input tokens as a multiple of input, per model (the whole table; else "
               f"{ratios.DEFAULT_CREATE_CACHE_RATIO:g}); one-hour writes cost {CACHE_WRITE_1H_MULTIPLIER:g} times "
               "this.", specs.ratio_map()),
    OptionSpec("ImageRatio", ratios.default_json("ImageRatio"),
               "Price of image input tokens as a multiple of input, per model (the whole table; else 1).",
               specs.ratio_map()),
    OptionSpec("AudioRatio", ratios.default_json("AudioRatio"),
               "Price of audio input tokens as a multiple of input, per model (the whole table; else 1).",
               specs.ratio_map()),
    OptionSpec("AudioCompletionRatio", ratios.default_json("AudioCompletionRatio"),
               "Price of audio output tokens as a multiple of the audio input price (AudioRatio), per model "
               "(the whole table; else 1).", specs.ratio_map()),
    OptionSpec("GroupRatio", '{"default": 1, "vip": 1, "svip": 1}', "Price multiplier per user group (0: free).",
               specs.ratio_map()),
    OptionSpec("UserUsableGroups", '{"default": "default"}',
               "Groups any user may pick for an API key (name: description), besides their own group.",
               specs.text_map),
    OptionSpec("GroupGroupRatio", "{}",
               "A user group's own price multiplier for a using group ({user group: {using group: ratio}}), "
               "instead of GroupRatio.", specs.described(groups.group_group_ratio, "json")),
    OptionSpec("group_ratio_setting.group_special_usable_group", "{}",
               "Per user group, groups added to (\"+:name\" or \"name\": description) or removed from "
               "(\"-:name\") UserUsableGroups.", specs.described(groups.special_usable_groups, "json")),
    OptionSpec("AutoGroups", '["default"]',
               "The groups an API key of group auto uses, in order: the first the user may use that serves "
               "the model.", specs.described(groups.auto_groups, "json")),
    OptionSpec("DefaultUseAutoGroup", "false", "New API keys default to the auto group (the UI's choice).",
               specs.boolean),
    OptionSpec("QuotaRemindThreshold", "1000",
               "A user whose remaining quota falls below this (or below their own quota_warning_threshold) "
               "is warned once, until it rises above again (0: never).", specs.integer(0, 2**53)),
    OptionSpec("PreConsumedQuota", "500", "Quota reserved per request when no estimate is possible.",
               specs.integer(0, 10**12)),
    OptionSpec("ModelMaxOutputTokens", output_limits.default_json(),
               "The most output tokens per answer, by model (a name ending in * is a prefix; the whole "
               "table): what a request that sets no max tokens reserves and is sent upstream with.",
               specs.described(output_limits.parse_output_limits, "json")),
    OptionSpec("DefaultMaxTokensReserve", "4096",
               "Output tokens per answer for a request that sets no max tokens, when ModelMaxOutputTokens "
               "does not name its model: reserved, and sent upstream as its bound.",
               specs.integer(1, output_limits.MAX_OUTPUT_TOKENS)),
    OptionSpec("QuotaForNewUser", "0", "Quota a new user starts with.", specs.integer(0, 10**15)),
    OptionSpec("SelfUseModeEnabled", "false", "Self-use mode: models without a price are free.", specs.boolean),
    OptionSpec("AutomaticDisableChannelEnabled", "true", "Disable a channel whose key the upstream rejects.",
               specs.boolean),
    OptionSpec("AutomaticRetryStatusCodes", DEFAULT_RETRY_STATUS, "Upstream statuses that move on to another channel.",
               specs.status_ranges),
    OptionSpec("AutomaticDisableStatusCodes", "401,403", "Upstream statuses that disable the channel.",
               specs.status_ranges),
    OptionSpec("AutomaticDisableKeywords", "\n".join(DEFAULT_DISABLE_KEYWORDS),
               "Upstream error phrases (one per line) that disable the channel.", specs.lines),
    OptionSpec("ChannelCooldownBaseSeconds", "5",
               "A failing channel (or key of a multi-key channel) is skipped for this long, doubled at each "
               "failure in a row, then tried once (0: never skipped).", specs.number(0, 3600)),
    OptionSpec("ChannelCooldownMaxSeconds", "300", "The longest cooldown of a failing channel or key.",
               specs.number(0.01, 86_400)),
    OptionSpec("RetryTimeLimitSeconds", "60",
               "No further channel or key is tried once a request has spent this long on attempts.",
               specs.number(0.1, 3600)),
    OptionSpec("LogConsumeEnabled", "true", "Write a log row per billed request.", specs.boolean),
    OptionSpec("LogRetentionDays", "0", "Delete log rows older than this many days (0: keep).",
               specs.integer(0, 36_500)),
    OptionSpec("LogRetentionMaxRows", "0", "Keep at most this many log rows, the newest (0: no limit).",
               specs.integer(0, 10**12)),
    OptionSpec("DisplayInCurrencyEnabled", "true", "Show quota as money in the UI.", specs.boolean),
    OptionSpec("DisplayTokenStatEnabled", "true", "The OpenAI billing endpoints (/dashboard/billing/…) report "
               "the calling key's quota; off: its owner's.", specs.boolean),
    OptionSpec("USDExchangeRate", "7.3", "Units of CNY per US dollar, for the CNY display type and the channel "
               "balances vendors report in yuan.",
               specs.number(0.0001, 1e6)),
    OptionSpec("general_setting.custom_currency_exchange_rate", "1", "Units of the custom currency per US "
               "dollar, for the CUSTOM display type.", specs.number(0.0001, 1e6)),
    OptionSpec("general_setting.custom_currency_symbol", "\u00a4", "The currency symbol of the CUSTOM display type.",
               specs.text(8)),
    OptionSpec("DemoSiteEnabled", "false", "Demo site mode.", specs.boolean),
    OptionSpec("general_setting.quota_display_type", "USD", "How quota is shown: USD, CNY, TOKENS or CUSTOM.",
               specs.choice("USD", "CNY", "TOKENS", "CUSTOM")),
    OptionSpec("SystemName", "Faregate", "The site's name.", specs.text(128)),
    OptionSpec("Notice", "", "Notice shown to users (Markdown).", specs.text(65_536)),
    OptionSpec("About", "", "About page (Markdown or a URL).", specs.text(65_536)),
    OptionSpec("HomePageContent", "", "Home page (Markdown or a URL).", specs.text(65_536)),
    OptionSpec("Footer", "", "Page footer (HTML).", specs.text(65_536)),
    OptionSpec("Logo", "", "Logo URL.", specs.text(2048)),
    OptionSpec("UserAgreement", "", "User agreement (Markdown or a URL).", specs.text(262_144)),
    OptionSpec("PrivacyPolicy", "", "Privacy policy (Markdown or a URL).", specs.text(262_144)),
    OptionSpec("ExposeRatioEnabled", "false", "Publish the price ratios at /api/ratio_config (for ratio sync).",
               specs.boolean),
    OptionSpec("ServerAddress", "", "The gateway's public address.", specs.text(2048)),
    OptionSpec("SyncUpstreamBase", "https://basellm.github.io/llm-metadata",
               "Model metadata sync reads {this}/api/newapi/models.json and vendors.json "
               "(new-api's SYNC_UPSTREAM_BASE).", _http_url(512)),
    OptionSpec("console_setting.uptime_kuma_groups", "",
               "Uptime Kuma status pages proxied at /api/uptime/status: a JSON array of "
               "{categoryName, url, slug, description}.", specs.described(_uptime_kuma_groups, "json")),
)

# the account options (registration, password login, email rules), the general payment options
# (top-up prices) and the rate limits' live beside the code reading them
CORE_REGISTRY = OptionRegistry((*CORE_OPTIONS, *ACCOUNT_OPTIONS, *PAYMENT_OPTIONS, *LIMIT_OPTIONS))


class Options:
    """Typed option values, parsed once per change. A stored value its option refuses
    is logged and replaced by the default: nothing unchecked reaches a request."""

    def __init__(self, raw: dict[str, str], registry: OptionRegistry = CORE_REGISTRY) -> None:
        self.raw = raw
        self.values: dict[str, Any] = {}
        for key, spec in registry.specs.items():
            stored = raw.get(key)
            if stored is not None:
                try:
                    self.values[key] = spec.parse(stored)
                    continue
                except (ValueError, TypeError, OverflowError) as exc:
                    log.warning("option %s: the stored value is refused (%s); using the default", key, exc)
            self.values[key] = spec.parse(spec.default)
        v = self.values
        self.quota_per_unit: float = v["QuotaPerUnit"]
        self.retry_times: int = v["RetryTimes"]
        # each price table is its option's value, whole (the built-in one until an admin stores one)
        self.model_ratio: dict[str, float] = v["ModelRatio"]
        self.completion_ratio: dict[str, float] = v["CompletionRatio"]
        self.model_price: dict[str, float] = v["ModelPrice"]
        self.cache_ratio: dict[str, float] = v["CacheRatio"]
        self.create_cache_ratio: dict[str, float] = v["CreateCacheRatio"]
        self.image_ratio: dict[str, float] = v["ImageRatio"]
        self.audio_ratio: dict[str, float] = v["AudioRatio"]
        self.audio_completion_ratio: dict[str, float] = v["AudioCompletionRatio"]
        self.group_ratio: dict[str, float] = v["GroupRatio"]
        self.user_usable_groups: dict[str, str] = v["UserUsableGroups"]
        self.group_group_ratio: dict[str, dict[str, float]] = v["GroupGroupRatio"]
        self.special_usable_groups: dict[str, dict[str, str]] = v["group_ratio_setting.group_special_usable_group"]
        self.auto_groups: list[str] = v["AutoGroups"]
        self.quota_remind_threshold: int = v["QuotaRemindThreshold"]
        self.pre_consumed_quota: int = v["PreConsumedQuota"]
        self.default_max_tokens: int = v["DefaultMaxTokensReserve"]
        self.output_limits: output_limits.OutputLimits = v["ModelMaxOutputTokens"]
        self.self_use_mode: bool = v["SelfUseModeEnabled"]
        self.auto_disable: bool = v["AutomaticDisableChannelEnabled"]
        self.retry_status: list[tuple[int, int]] = v["AutomaticRetryStatusCodes"]
        self.disable_status: list[tuple[int, int]] = v["AutomaticDisableStatusCodes"]
        self.log_consume: bool = v["LogConsumeEnabled"]
        self.disable_keywords: list[str] = v["AutomaticDisableKeywords"]
        self.cooldown_base: float = v["ChannelCooldownBaseSeconds"]
        self.cooldown_max: float = v["ChannelCooldownMaxSeconds"]
        self.retry_time_limit: float = v["RetryTimeLimitSeconds"]
        self.system_name: str = v["SystemName"]
        self.limits = LimitOptions.from_values(v)

    # ---- a model's prices, found as new-api finds them (faregate.billing.ratios) ----
    def price_of(self, model: str) -> float | None:
        """The fixed US dollars per call of ``model`` (ModelPrice, by its matching name), if any."""
        return self.model_price.get(ratios.matching_name(model))

    def ratio_of(self, model: str) -> float | None:
        """The ModelRatio of ``model`` (by its matching name), None when it is not priced."""
        return self.model_ratio.get(ratios.matching_name(model))

    def completion_ratio_of(self, model: str) -> float:
        """CompletionRatio's entry for ``model`` (by its matching name), else its family's."""
        name = ratios.matching_name(model)
        found = self.completion_ratio.get(name)
        return found if found is not None else ratios.family_completion_ratio(name)

    def max_output_of(self, model: str) -> int:
        """The most output tokens one answer of ``model`` may have when the request sets no
        bound: ModelMaxOutputTokens' entry (by its matching name), else DefaultMaxTokensReserve."""
        found = self.output_limits.limit(model)
        return found if found is not None else self.default_max_tokens

    def cache_ratio_of(self, model: str) -> float:
        return self.cache_ratio.get(model, 1.0)  # by the exact name, as new-api

    def create_cache_ratio_of(self, model: str) -> float:
        return self.create_cache_ratio.get(model, ratios.DEFAULT_CREATE_CACHE_RATIO)

    def image_ratio_of(self, model: str) -> float:
        return self.image_ratio.get(model, 1.0)

    def audio_ratio_of(self, model: str) -> float:
        return self.audio_ratio.get(ratios.matching_name(model), 1.0)

    def audio_completion_ratio_of(self, model: str) -> float:
        return self.audio_completion_ratio.get(ratios.matching_name(model), 1.0)

    def usable_groups(self, user_group: str) -> dict[str, str]:
        """The groups a user may give an API key (new-api's GetUserUsableGroups): the
        ``UserUsableGroups`` option adjusted by the user group's special rules
        (``group_ratio_setting.group_special_usable_group``), plus the user's own group;
        ``auto`` only where those list it."""
        return groups.usable_groups(self.user_usable_groups, self.special_usable_groups, user_group)

    def group_ratio_for(self, user_group: str, using_group: str) -> float:
        """What a user of ``user_group`` pays in ``using_group`` (new-api's
        GetUserGroupRatio): GroupGroupRatio's own ratio, else GroupRatio's (1 when absent)."""
        special = self.group_group_ratio.get(user_group)
        if special is not None and using_group in special:
            return special[using_group]
        return self.group_ratio.get(using_group, 1.0)

    def user_auto_groups(self, user_group: str) -> list[str]:
        """The ``AutoGroups`` a user of ``user_group`` may use, in order (new-api's GetUserAutoGroup)."""
        usable = self.usable_groups(user_group)
        return [group for group in self.auto_groups if group in usable]

    def value(self, key: str) -> Any:
        """The typed value of a declared option (a plugin's too)."""
        return self.values[key]

    def should_disable(self, status: int, err: GatewayError) -> bool:
        """new-api's auto-ban rules: a status in AutomaticDisableStatusCodes, a code or type
        that means the key is dead, or a configured keyword in the message."""
        if any(lo <= status <= hi for lo, hi in self.disable_status):  # each entry a status or a range
            return True
        if err.code in DISABLE_CODES or err.type in DISABLE_TYPES:
            return True
        message = (err.message or "").lower()
        return any(word in message for word in self.disable_keywords)

    def should_retry_status(self, status: int) -> bool:
        if status in (400, 408, 504, 524) or 200 <= status < 300:
            return False
        if status < 100 or status > 599:
            return True
        return any(lo <= status <= hi for lo, hi in self.retry_status)
