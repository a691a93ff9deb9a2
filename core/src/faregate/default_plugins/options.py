"""The core's runtime options, collected from the layers that own them.

Each owner declares its options as a tuple of :class:`OptionSpec` beside the code that reads
them; this assembly module lists the tuples (:data:`CORE_OPTION_SETS`), so the state layer's
registry is filled from above and never imports an owner. A new set of options is one more
line here (docs/architecture.md, "Options"); a plugin declares its own through
``register_settings`` instead. The registry keeps the first spec of a key: the core's come
before the plugins', in the order listed."""

from __future__ import annotations

from faregate.accounts.key_options import TOKEN_OPTIONS
from faregate.accounts.options import ACCOUNT_OPTIONS
from faregate.billing.options import BILLING_OPTIONS
from faregate.channel_monitor import MONITOR_OPTIONS
from faregate.exchange.options import RELAY_OPTIONS
from faregate.exchange.sensitive import SENSITIVE_OPTIONS
from faregate.limits.options import LIMIT_OPTIONS
from faregate.log_retention import LOG_RETENTION_OPTIONS
from faregate.management.dashboard_options import DATA_OPTIONS
from faregate.management.site_options import SITE_OPTIONS, SiteOptions
from faregate.payments.money import PAYMENT_OPTIONS
from faregate.state.absent_options import ABSENT_OPTIONS
from faregate.state.console_options import CONSOLE_OPTIONS
from faregate.state.option_specs import OptionRegistry, OptionSpec

#: every option set of the core, in declaration order (``GET /api/option/schema`` lists them so)
CORE_OPTION_SETS: tuple[tuple[OptionSpec, ...], ...] = (
    BILLING_OPTIONS,
    RELAY_OPTIONS,
    LIMIT_OPTIONS,
    LOG_RETENTION_OPTIONS,
    SITE_OPTIONS,
    ACCOUNT_OPTIONS,
    PAYMENT_OPTIONS,
    SENSITIVE_OPTIONS,  # the prompt check (exchange/sensitive.py)
    MONITOR_OPTIONS,  # the channel monitor (channel_monitor.py)
    TOKEN_OPTIONS,  # token_setting.* (accounts/key_options.py)
    DATA_OPTIONS,  # the data dashboard (management/dashboard_options.py)
    CONSOLE_OPTIONS,  # new-api's console-only options
    ABSENT_OPTIONS,  # new-api's options of features Faregate does not have: refused by name
)

CORE_REGISTRY = OptionRegistry(spec for specs in CORE_OPTION_SETS for spec in specs)

#: the options as the snapshot builds them: every typed attribute of the core's layers
GatewayOptions = SiteOptions


def core_options(raw: dict[str, str] | None = None) -> GatewayOptions:
    """The core's options with ``raw`` stored (none: every default), as a gateway without
    plugins reads them: for tests and tools that need no gateway."""
    return GatewayOptions(raw or {}, CORE_REGISTRY)
