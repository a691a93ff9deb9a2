"""The options billing owns (new-api's names): the quota unit, the price tables, the groups and
their ratios, output bounds, reservations and how quota is shown as money; and
:class:`BillingOptions`, the snapshot's options with these read once per change into typed
attributes and a model's prices found as new-api finds them (:mod:`faregate.billing.ratios`).

The gateway's option registry collects :data:`BILLING_OPTIONS` with the other owners' (see
``docs/architecture.md``, "Options"); the state layer never imports them."""

from __future__ import annotations

from faregate.billing import groups, output_limits, ratios
from faregate.billing.pricing import CACHE_WRITE_1H_MULTIPLIER, Price
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionRegistry, OptionSpec
from faregate.state.options import Options

QUOTA_PER_UNIT_DEFAULT = 500_000

BILLING_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("QuotaPerUnit", str(QUOTA_PER_UNIT_DEFAULT), "Quota units per US dollar.", specs.number(1, 1e12)),
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
    OptionSpec("SelfUseModeEnabled", "false", "Self-use mode: models without a price are free.", specs.boolean),
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
    OptionSpec("general_setting.quota_display_type", "USD", "How quota is shown: USD, CNY, TOKENS or CUSTOM.",
               specs.choice("USD", "CNY", "TOKENS", "CUSTOM")),
)


class BillingOptions(Options):
    """The options with billing's read into typed attributes, and a model's prices and a
    user's groups found from them (read on the hot path: no parsing per request)."""

    def __init__(self, raw: dict[str, str], registry: OptionRegistry) -> None:
        super().__init__(raw, registry)
        v = self.values
        self.quota_per_unit: float = v["QuotaPerUnit"]
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
        #: prices found from these options (faregate.billing.model_prices), by model and group ratio
        self.prices: dict[tuple[str, float], Price | None] = {}

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
