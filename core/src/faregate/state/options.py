"""Runtime options (new-api's options table): typed accessors with new-api's defaults,
parsed once per change rather than per request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from faregate import jsonutil

if TYPE_CHECKING:
    from faregate.errors import GatewayError

QUOTA_PER_UNIT_DEFAULT = 500_000

# A small built-in price table (ratio 1 = $2 / 1M input tokens), overridable by the
# ModelRatio / CompletionRatio options.
DEFAULT_MODEL_RATIO: dict[str, float] = {
    "gpt-4o": 1.25,
    "gpt-4o-mini": 0.075,
    "gpt-4.1": 1.0,
    "gpt-4.1-mini": 0.2,
    "gpt-4": 15.0,
    "gpt-3.5-turbo": 0.25,
    "o3-mini": 0.55,
    "claude-sonnet-4-5": 1.5,
    "claude-3-5-haiku-latest": 0.4,
    "gemini-2.5-flash": 0.15,
}
DEFAULT_COMPLETION_RATIO: dict[str, float] = {
    "gpt-4o": 4.0,
    "gpt-4o-mini": 4.0,
    "gpt-4.1": 4.0,
    "gpt-4.1-mini": 4.0,
    "gpt-4": 2.0,
    "gpt-3.5-turbo": 3.0,
    "o3-mini": 4.0,
    "claude-sonnet-4-5": 5.0,
    "claude-3-5-haiku-latest": 5.0,
    "gemini-2.5-flash": 8.33,
}

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


def parse_ranges(text: str) -> list[tuple[int, int]]:
    ranges = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            ranges.append((int(lo), int(hi or lo)))
        except ValueError:
            continue
    return ranges


class Options:
    def __init__(self, raw: dict[str, str]) -> None:
        self.raw = raw
        self.quota_per_unit = self.number("QuotaPerUnit", QUOTA_PER_UNIT_DEFAULT)
        self.retry_times = int(self.number("RetryTimes", 0))
        self.model_ratio = {**DEFAULT_MODEL_RATIO, **self.json_map("ModelRatio")}
        self.completion_ratio = {**DEFAULT_COMPLETION_RATIO, **self.json_map("CompletionRatio")}
        self.model_price = self.json_map("ModelPrice")
        self.cache_ratio = self.json_map("CacheRatio")
        self.create_cache_ratio = self.json_map("CreateCacheRatio")
        self.group_ratio = {"default": 1.0, "vip": 1.0, "svip": 1.0, **self.json_map("GroupRatio")}
        self.pre_consumed_quota = int(self.number("PreConsumedQuota", 500))
        self.default_max_tokens = int(self.number("DefaultMaxTokensReserve", 4096))
        self.self_use_mode = self.boolean("SelfUseModeEnabled", False)
        self.auto_disable = self.boolean("AutomaticDisableChannelEnabled", True)
        self.retry_status = parse_ranges(self.raw.get("AutomaticRetryStatusCodes") or DEFAULT_RETRY_STATUS)
        self.disable_status = {
            lo for lo, _ in parse_ranges(self.raw.get("AutomaticDisableStatusCodes") or "401,403")
        }
        self.log_consume = self.boolean("LogConsumeEnabled", True)
        keywords = self.raw.get("AutomaticDisableKeywords")
        self.disable_keywords = [k.strip().lower() for k in (keywords.split("\n") if keywords is not None
                                                             else DEFAULT_DISABLE_KEYWORDS) if k.strip()]
        self.system_name = self.raw.get("SystemName", "Faregate")

    def number(self, key: str, default: float) -> float:
        try:
            return float(self.raw[key])
        except (KeyError, ValueError):
            return default

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw.get(key)
        if value is None:
            return default
        return value.strip().lower() in ("true", "1", "yes")

    def json_map(self, key: str) -> dict[str, Any]:
        text = self.raw.get(key)
        if not text:
            return {}
        try:
            value = jsonutil.loads(text)
        except jsonutil.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}

    def should_disable(self, status: int, err: GatewayError) -> bool:
        """new-api's auto-ban rules: a status in AutomaticDisableStatusCodes, a code or type
        that means the key is dead, or a configured keyword in the message."""
        if status in self.disable_status:
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
