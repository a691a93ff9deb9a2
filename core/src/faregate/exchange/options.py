"""The options of a request's way the exchange owns (new-api's names): retries, which upstream
answers disable a channel or move on to another, cooldowns of failing channels, the consume
log; and :class:`RelayOptions`, the options with these (and billing's below them) read once
per change into typed attributes.

The gateway's option registry collects :data:`RELAY_OPTIONS` with the other owners' (see
``docs/architecture.md``, "Options")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from faregate.billing.options import BillingOptions
from faregate.limits.options import LimitOptions
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionRegistry, OptionSpec

if TYPE_CHECKING:
    from faregate.errors import GatewayError

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

RELAY_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("RetryTimes", "0", "Further channels tried after a failed attempt.", specs.integer(0, 10)),
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
)


class RelayOptions(BillingOptions):
    """The options with the exchange's read into typed attributes (on top of billing's), and
    new-api's rules for an upstream's error answer."""

    def __init__(self, raw: dict[str, str], registry: OptionRegistry) -> None:
        super().__init__(raw, registry)
        v = self.values
        self.retry_times: int = v["RetryTimes"]
        self.auto_disable: bool = v["AutomaticDisableChannelEnabled"]
        self.retry_status: list[tuple[int, int]] = v["AutomaticRetryStatusCodes"]
        self.disable_status: list[tuple[int, int]] = v["AutomaticDisableStatusCodes"]
        self.log_consume: bool = v["LogConsumeEnabled"]
        self.disable_keywords: list[str] = v["AutomaticDisableKeywords"]
        self.cooldown_base: float = v["ChannelCooldownBaseSeconds"]
        self.cooldown_max: float = v["ChannelCooldownMaxSeconds"]
        self.retry_time_limit: float = v["RetryTimeLimitSeconds"]
        self.limits = LimitOptions.from_values(v)  # the rate limits (faregate.limits), checked at admission

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
