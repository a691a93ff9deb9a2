"""Settings: declared by the core and by plugins (``register_settings``), read from
``FAREGATE_<NAME>`` environment variables once at start."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class SettingError(ValueError):
    """A ``FAREGATE_*`` value that does not parse: the start stops with this one line."""


def _bool(value: str) -> bool:
    word = value.strip().lower()
    if word not in _TRUE + _FALSE:
        raise ValueError("expected 1/0, true/false, yes/no or on/off")
    return word in _TRUE


def non_negative(value: str) -> float:
    """A finite number ≥ 0 (durations, sizes)."""
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError("expected a finite number ≥ 0")
    return number


def allow_deny(value: str) -> str:
    """``allow`` or ``deny``, nothing else (a typo must not silently mean either)."""
    word = value.strip().lower()
    if word not in ("allow", "deny"):
        raise ValueError("expected allow or deny")
    return word


#: what a parser expects, for the error message of a value it refuses
EXPECTED: dict[Callable[[str], Any], str] = {float: "a number", int: "a whole number",
                                             non_negative: "a finite number ≥ 0",
                                             _bool: "1/0, true/false, yes/no or on/off",
                                             allow_deny: "allow or deny"}


@dataclass(frozen=True)
class Setting:
    name: str  # lower_snake; env var is FAREGATE_<NAME>
    default: Any
    description: str
    parse: Callable[[str], Any] = str

    @property
    def env(self) -> str:
        return "FAREGATE_" + self.name.upper()


CORE_SETTINGS = (
    Setting("data_dir", "./data", "Directory for the SQLite database and generated secrets."),
    Setting("db_url", "", "Database URL: sqlite:///path, mysql://…, postgres://…; empty = SQLite in data_dir."),
    Setting("redis_url", "", "Redis URL; when set, cache changes reach every node through pub/sub."),
    Setting("crypto_secret", "",
            "Key (any string) for encrypting channel keys at rest; generated into data_dir if empty."),
    Setting("session_secret", "", "Key for signing session cookies; generated into data_dir if empty."),
    Setting("connect_timeout", 10.0, "Seconds to connect to an upstream.", non_negative),
    Setting("first_byte_timeout", 300.0, "Seconds to wait for an upstream's response headers.", non_negative),
    Setting("stream_idle_timeout", 300.0, "Seconds of upstream silence that end a stream.", non_negative),
    Setting("client_gone_drain_seconds", 30.0,
            "When a client leaves mid-stream, read the upstream on for up to this long to bill its own "
            "usage (0: stop at once and estimate).", non_negative),
    Setting("max_body_mb", 128.0, "Largest request body accepted by the relay routes (chat, messages …), in MiB.",
            non_negative),
    Setting("count_tokens_max_body_mb", 32.0,
            "Largest body of a count_tokens request, in MiB (Anthropic's own limit is 32 MB).", non_negative),
    Setting("management_max_body_mb", 2.0, "Largest body of a management API (/api/…) request, in MiB.",
            non_negative),
    Setting("offload_body_kb", 256.0,
            "Requests larger than this (KiB) have their tokens estimated in a worker thread, so the event "
            "loop keeps serving meanwhile.", non_negative),
    Setting("body_timeout", 120.0, "Seconds a client may take to send its request body.", non_negative),
    Setting("flush_interval", 0.05, "Seconds between billing/log flushes to the database.", non_negative),
    Setting("lease_idle_seconds", 5.0, "Unused quota leases go back to the database after this many seconds.",
            non_negative),
    Setting("sweep_interval", 15.0, "Seconds between sweeps for leases of dead workers.", non_negative),
    Setting("sync_interval", 30.0, "Seconds between full cache reloads (a safety net under the change feed).",
            non_negative),
    Setting("login_window_seconds", 900.0,
            "Login throttle window: failed logins are counted per client IP and per account over this many "
            "seconds (shared through Redis when redis_url is set, else per worker).", non_negative),
    Setting("login_max_failures_per_account", 10.0,
            "Failed logins for one account within the window before it answers 429 (0: no limit).", non_negative),
    Setting("login_max_failures_per_ip", 30.0,
            "Failed logins from one client IP within the window before it answers 429 (0: no limit).",
            non_negative),
    Setting("migrate", True, "Apply schema migrations at start.", _bool),
    Setting("retention_interval", 600.0,
            "Seconds between log retention rounds (each round runs once per deployment).", non_negative),
    Setting("secure_cookies", False,
            "Mark the session cookie Secure (browsers then send it over https only): set it when users "
            "reach the gateway over https, directly or through a TLS-terminating proxy.", _bool),
    Setting("channel_private_addresses", "allow",
            "Whether a channel's base URL may point at a loopback or private address (local vLLM, Ollama): "
            "allow or deny. Link-local and cloud metadata addresses are refused either way.", allow_deny),
)


class Settings:
    """Resolved values; attribute access by setting name."""

    def __init__(self, declared: Iterable[Setting], overrides: dict[str, Any] | None = None,
                 environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self._declared: dict[str, Setting] = {}
        for setting in declared:  # first wins: a plugin cannot redefine the core's settings
            self._declared.setdefault(setting.name, setting)
        self._values: dict[str, Any] = {}
        for s in self._declared.values():
            raw = env.get(s.env)
            if raw in (None, ""):
                self._values[s.name] = s.default
                continue
            try:
                self._values[s.name] = s.parse(raw)
            except (ValueError, TypeError, ArithmeticError) as exc:
                expected = EXPECTED.get(s.parse) or str(exc) or "a valid value"
                raise SettingError(f"{s.env}={raw!r} is not valid: expected {expected.removeprefix('expected ')} "
                                   f"({s.description})") from None
        for key, value in (overrides or {}).items():
            self._values[key] = value

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def declared(self) -> list[Setting]:
        return list(self._declared.values())
