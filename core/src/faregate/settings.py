"""Settings: declared by the core and by plugins (``register_settings``), read from
``FAREGATE_<NAME>`` environment variables once at start."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


def _bool(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


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
    Setting("connect_timeout", 10.0, "Seconds to connect to an upstream.", float),
    Setting("first_byte_timeout", 300.0, "Seconds to wait for an upstream's response headers.", float),
    Setting("stream_idle_timeout", 300.0, "Seconds of upstream silence that end a stream.", float),
    Setting("client_gone_drain_seconds", 30.0,
            "When a client leaves mid-stream, read the upstream on for up to this long to bill its own "
            "usage (0: stop at once and estimate).", float),
    Setting("max_body_mb", 128.0, "Largest request body accepted, in MiB.", float),
    Setting("flush_interval", 0.05, "Seconds between billing/log flushes to the database.", float),
    Setting("lease_idle_seconds", 5.0, "Unused quota leases go back to the database after this many seconds.", float),
    Setting("sweep_interval", 15.0, "Seconds between sweeps for leases of dead workers.", float),
    Setting("sync_interval", 30.0, "Seconds between full cache reloads (a safety net under the change feed).", float),
    Setting("migrate", True, "Apply schema migrations at start.", _bool),
)


class Settings:
    """Resolved values; attribute access by setting name."""

    def __init__(self, declared: Iterable[Setting], overrides: dict[str, Any] | None = None,
                 environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self._declared = {s.name: s for s in declared}
        self._values: dict[str, Any] = {}
        for s in self._declared.values():
            raw = env.get(s.env)
            self._values[s.name] = s.parse(raw) if raw not in (None, "") else s.default
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
