"""What can be set at start: the core's settings, each a name, a default, a type that
pydantic validates, a description (the settings table in docs/settings.md is made from
these) and, where new-api has a variable meaning the same thing, its name as an alias.
Plugins declare theirs the same way through ``register_settings``."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_settings import NoDecode

from faregate.db.dsn import database_url
from faregate.settings.command_line import ENV_PREFIX


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _comma_list(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def _network(value: str) -> str:
    ipaddress.ip_network(value, strict=False)  # ValueError names the bad entry
    return value


#: a finite number ≥ 0 (durations, sizes)
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Flag = bool  # pydantic reads 1/0, true/false, yes/no, on/off
Port = Annotated[int, Field(ge=1, le=65535)]
#: how many of something (a limit; 0 usually turns it off)
Count = Annotated[int, Field(ge=0, le=1_000_000_000)]
#: whole seconds, up to ten years
Seconds = Annotated[int, Field(ge=0, le=315_360_000)]
AllowDeny = Annotated[Literal["allow", "deny"], BeforeValidator(_lower)]
NodeType = Annotated[Literal["master", "slave"], BeforeValidator(_lower)]
LogLevel = Annotated[Literal["debug", "info", "warning", "error", "critical"], BeforeValidator(_lower)]
LogFormat = Annotated[Literal["text", "json"], BeforeValidator(_lower)]
#: comma-separated in the environment, a list in the config file
Names = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_comma_list)]
Networks = Annotated[tuple[Annotated[str, AfterValidator(_network)], ...], NoDecode, BeforeValidator(_comma_list)]
DatabaseUrl = Annotated[str, AfterValidator(database_url)]
Secret = Annotated[str, Field(max_length=4096)]


@dataclass(frozen=True)
class Setting:
    name: str  # lower_snake; the environment variable is FAREGATE_<NAME>
    default: Any
    description: str
    #: the type pydantic validates the value against (None: the default's type)
    type: Any = None
    #: other environment variables meaning the same (new-api's), below FAREGATE_<NAME> in precedence
    aliases: tuple[str, ...] = ()
    #: masked by ``faregate config show`` and every listing
    secret: bool = False

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def annotation(self) -> Any:
        return self.type if self.type is not None else type(self.default)


CORE_SETTINGS = (
    Setting("config", "", "Path of a TOML settings file (keys are the setting names, lower case); the "
            "environment and command-line flags override it."),
    Setting("host", "127.0.0.1", "Address to listen on (0.0.0.0: every interface)."),
    Setting("port", 3000, "Port to listen on.", Port, aliases=("PORT",)),
    Setting("workers", 1, "Worker processes serving requests (a master keeps the port and replaces a worker that "
            "dies).", Annotated[int, Field(ge=1, le=512)]),
    Setting("node_type", "master", "master or slave (new-api's NODE_TYPE): a slave applies no migrations at start; "
            "one master per deployment does.", NodeType, aliases=("NODE_TYPE",)),
    Setting("data_dir", "./data", "Directory for the SQLite database and generated secrets."),
    Setting("db_url", "", "Database URL: sqlite:///path, mysql://…, postgres://… (new-api's Go DSN "
            "user:pass@tcp(host:port)/db too); empty = SQLite in data_dir.", DatabaseUrl,
            aliases=("SQL_DSN", "SQLITE_PATH")),
    Setting("redis_url", "", "Redis URL; when set, cache changes reach every node through pub/sub.",
            aliases=("REDIS_CONN_STRING",)),
    Setting("crypto_secret", "", "Key (any string) for encrypting channel keys at rest; generated into data_dir "
            "if empty. Set the same value on every node.", Secret, aliases=("CRYPTO_SECRET",), secret=True),
    Setting("session_secret", "", "Key for signing session cookies; generated into data_dir if empty. Set the "
            "same value on every node.", Secret, aliases=("SESSION_SECRET",), secret=True),
    Setting("plugins", (), "Entry-point names of the plugins to load (comma-separated); empty = every installed "
            "plugin. A name no installed plugin has refuses the start.", Names),
    Setting("disabled_plugins", (), "Entry-point names of plugins never to load (comma-separated; the core's "
            "defaults by their short name, e.g. pricing). A name no installed plugin has refuses the start.", Names),
    Setting("log_level", "info", "Log level: debug, info, warning, error or critical.", LogLevel),
    Setting("log_format", "text", "Log format: text (for a terminal) or json (one JSON object per line, for "
            "machines: then every line the process writes is JSON).", LogFormat),
    Setting("access_log", False, "Also log every HTTP request Hypercorn serves (the relay logs its own line per "
            "request either way).", Flag),
    Setting("trusted_proxies", (), "Addresses or networks (comma-separated, e.g. 10.0.0.0/8,127.0.0.1) of reverse "
            "proxies whose X-Forwarded-For, X-Real-IP and X-Request-Id headers are believed; from anyone else "
            "they are ignored.", Networks),
    Setting("metrics_enabled", True, "Serve Prometheus metrics at GET /metrics.", Flag),
    Setting("metrics_token", "", "When set, GET /metrics requires Authorization: Bearer <token>.", Secret,
            secret=True),
    Setting("connect_timeout", 10.0, "Seconds to connect to an upstream.", NonNegative),
    Setting("first_byte_timeout", 300.0, "Seconds to wait for an upstream's response headers.", NonNegative),
    Setting("stream_idle_timeout", 300.0, "Seconds of upstream silence that end a stream.", NonNegative,
            aliases=("STREAMING_TIMEOUT",)),
    Setting("client_gone_drain_seconds", 30.0,
            "When a client leaves mid-stream, read the upstream on for up to this long to bill its own "
            "usage (0: stop at once and estimate).", NonNegative),
    Setting("max_body_mb", 128.0, "Largest request body accepted by the relay routes (chat, messages …), in MiB.",
            NonNegative, aliases=("MAX_REQUEST_BODY_MB",)),
    Setting("count_tokens_max_body_mb", 32.0,
            "Largest body of a count_tokens request, in MiB (Anthropic's own limit is 32 MB).", NonNegative),
    Setting("management_max_body_mb", 2.0, "Largest body of a management API (/api/…) request, in MiB.",
            NonNegative),
    Setting("offload_body_kb", 256.0,
            "Request bodies larger than this (KiB) are parsed and estimated one at a time per worker, the "
            "estimate in a worker thread, with a pause after each in proportion to its work, so big bodies "
            "cannot crowd out other requests.", NonNegative),
    Setting("body_timeout", 120.0, "Seconds a client may take to send its request body.", NonNegative),
    Setting("flush_interval", 0.05, "Seconds between billing/log flushes to the database.", NonNegative),
    Setting("lease_idle_seconds", 5.0, "Unused quota leases go back to the database after this many seconds.",
            NonNegative),
    Setting("sweep_interval", 15.0, "Seconds between sweeps for leases of dead workers.", NonNegative),
    Setting("sync_interval", 30.0, "Seconds between full cache reloads (a safety net under the change feed).",
            NonNegative, aliases=("SYNC_FREQUENCY",)),
    Setting("login_window_seconds", 900.0,
            "Login throttle window: failed logins are counted per client IP, per account from each IP and per "
            "account over this many seconds (shared through Redis when redis_url is set, else per worker).",
            NonNegative),
    Setting("login_max_failures_per_account", 10.0,
            "Failed logins for one account from one client IP within the window before that IP answers 429 for "
            "the account; other addresses are not refused (0: no limit).", NonNegative),
    Setting("login_max_failures_per_ip", 30.0,
            "Failed logins from one client IP within the window before it answers 429 (0: no limit).",
            NonNegative),
    Setting("login_account_lock_failures", 100,
            "Failed logins for one account from all addresses together within the window before the account "
            "is locked: then only a browser that signed in to it before, a second factor or a passkey gets in "
            "until the window ends or `faregate admin unlock` (0: never locked).", Count),
    Setting("critical_rate_limit_enable", True,
            "Limit sign-ups per client IP (new-api's CriticalRateLimit on its critical routes; here it counts "
            "every POST /api/user/register and every account an outside sign-in makes).", Flag,
            aliases=("CRITICAL_RATE_LIMIT_ENABLE",)),
    Setting("critical_rate_limit", 20,
            "Sign-ups one client IP may attempt within critical_rate_limit_duration before it answers 429 "
            "(shared through Redis when redis_url is set, else per worker; 0: no limit).", Count,
            aliases=("CRITICAL_RATE_LIMIT",)),
    Setting("critical_rate_limit_duration", 1200, "The window of critical_rate_limit, in seconds.", Seconds,
            aliases=("CRITICAL_RATE_LIMIT_DURATION",)),
    Setting("global_api_rate_limit_enable", True,
            "Limit the management API (/api/…) per client IP (new-api's GlobalAPIRateLimit).", Flag,
            aliases=("GLOBAL_API_RATE_LIMIT_ENABLE",)),
    Setting("global_api_rate_limit", 180,
            "Requests one client IP may make to /api/… within global_api_rate_limit_duration before it answers "
            "429 (shared through Redis when redis_url is set, else per worker; 0: no limit).", Count,
            aliases=("GLOBAL_API_RATE_LIMIT",)),
    Setting("global_api_rate_limit_duration", 180, "The window of global_api_rate_limit, in seconds.", Seconds,
            aliases=("GLOBAL_API_RATE_LIMIT_DURATION",)),
    Setting("global_web_rate_limit_enable", True,
            "Limit the web console's pages and files per client IP (new-api's GlobalWebRateLimit).", Flag,
            aliases=("GLOBAL_WEB_RATE_LIMIT_ENABLE",)),
    Setting("global_web_rate_limit", 60,
            "Requests one client IP may make to the console's pages (not its versioned files, which browsers "
            "cache) within global_web_rate_limit_duration before it answers 429 (0: no limit).", Count,
            aliases=("GLOBAL_WEB_RATE_LIMIT",)),
    Setting("global_web_rate_limit_duration", 180, "The window of global_web_rate_limit, in seconds.", Seconds,
            aliases=("GLOBAL_WEB_RATE_LIMIT_DURATION",)),
    Setting("invitation_code_rate_limit", 20,
            "Accounts one invitation code (aff) may bring in, from any addresses, within "
            "invitation_code_rate_limit_duration; a sign-up past it answers 429, so the inviter's reward cannot be "
            "farmed (0: no limit).", Count),
    Setting("invitation_code_rate_limit_duration", 86400, "The window of invitation_code_rate_limit, in seconds.",
            Seconds),
    Setting("migrate", True, "Apply schema migrations at start (on a master node).", Flag),
    Setting("retention_interval", 600.0,
            "Seconds between log retention rounds (each round runs once per deployment).", NonNegative),
    Setting("job_lease_seconds", 30.0,
            "Seconds a worker holds the lease of a background job that runs once per cluster (log retention, "
            "the channel monitor, the balance refresh) without renewing it; it renews every third of this, and "
            "another worker takes a job over this long after its holder died.", NonNegative),
    Setting("channel_update_frequency", 0,
            "Minutes between automatic refreshes of every channel's balance (once per cluster; 0: never, the "
            "balances are then refreshed from the console only).", Count, aliases=("CHANNEL_UPDATE_FREQUENCY",)),
    Setting("secure_cookies", False,
            "Mark the session cookie Secure (browsers then send it over https only): set it when users "
            "reach the gateway over https, directly or through a TLS-terminating proxy.", Flag),
    Setting("channel_private_addresses", "allow",
            "Whether a channel's base URL may point at a loopback or private address (local vLLM, Ollama): "
            "allow or deny. Link-local and cloud metadata addresses are refused either way. Checked when a "
            "channel is saved and again at every connection a channel makes (its proxy's included).", AllowDeny),
    Setting("notify_private_addresses", "deny",
            "Whether a user's notification URL (the webhook of their quota warnings) may point at a loopback "
            "or private address: allow or deny. Link-local and cloud metadata addresses are refused either "
            "way.", AllowDeny),
)
