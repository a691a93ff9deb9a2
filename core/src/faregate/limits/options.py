"""The rate limits' runtime options: new-api's model request rate limit
(``ModelRequestRateLimit*``, same names, defaults and checks) and the per-group defaults of
the per-key limits (``KeyRateLimitGroup``), parsed once per change into :class:`LimitOptions`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from faregate import jsonutil
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec

#: new-api's bound on a group's counts (a Go int32)
MAX_COUNT = 2**31 - 1
#: the per-key limits, by LiteLLM's names (a key's columns and KeyRateLimitGroup's fields)
KEY_LIMITS = ("rpm_limit", "tpm_limit", "max_parallel_requests")


def _json_object(value: str, what: str) -> dict[str, Any]:
    if not value.strip():
        return {}
    try:
        parsed = jsonutil.loads(value)
    except jsonutil.JSONDecodeError:
        raise ValueError(f"expected a JSON object {what}") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"expected a JSON object {what}")
    return parsed


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def group_rate_limits(value: str) -> dict[str, tuple[int, int]]:
    """``ModelRequestRateLimitGroup``: ``{"group": [count, success_count]}``, count from 0
    (no limit) and success count from 1, as new-api checks them."""
    groups: dict[str, tuple[int, int]] = {}
    for group, pair in _json_object(value, '{"group": [count, success_count]}').items():
        if not (isinstance(pair, list) and len(pair) == 2 and _count(pair[0]) and _count(pair[1])):
            raise ValueError(f"group {group}: expected [count, success_count], whole numbers from 0 to {MAX_COUNT}")
        if pair[1] < 1:
            raise ValueError(f"group {group} has negative rate limit values: [{pair[0]}, {pair[1]}]")
        groups[group] = (pair[0], pair[1])
    return groups


def key_limit_defaults(value: str) -> dict[str, dict[str, int]]:
    """``KeyRateLimitGroup``: ``{"group": {"rpm_limit": n, "tpm_limit": n,
    "max_parallel_requests": n}}``, each field optional, a whole number from 0 (no limit)."""
    groups: dict[str, dict[str, int]] = {}
    for group, limits in _json_object(value, '{"group": {"rpm_limit": n, …}}').items():
        if not isinstance(limits, dict):
            raise ValueError(f"group {group}: expected an object of {', '.join(KEY_LIMITS)}")
        unknown = sorted(set(limits) - set(KEY_LIMITS))
        if unknown:
            raise ValueError(f"group {group}: unknown field {unknown[0]} (expected {', '.join(KEY_LIMITS)})")
        for name, limit in limits.items():
            if not _count(limit):
                raise ValueError(f"group {group}: {name} must be a whole number from 0 to {MAX_COUNT}")
        groups[group] = {name: int(limit) for name, limit in limits.items() if limit}
    return groups


LIMIT_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("ModelRequestRateLimitEnabled", "false",
               "Limit each user's relay requests (new-api's model request rate limit).", specs.boolean),
    OptionSpec("ModelRequestRateLimitDurationMinutes", "1", "The window of the model request rate limit, in minutes.",
               specs.integer(1, 10_080)),
    OptionSpec("ModelRequestRateLimitCount", "0",
               "Relay requests one user may make per window, failed ones included (0: no limit).",
               specs.integer(0, MAX_COUNT)),
    OptionSpec("ModelRequestRateLimitSuccessCount", "1000",
               "Successful relay requests one user may make per window (0: no limit).", specs.integer(0, MAX_COUNT)),
    OptionSpec("ModelRequestRateLimitGroup", "{}",
               "Per group (the key's, else the user's), [count, success_count] instead of the two above.",
               specs.described(group_rate_limits, "json")),
    OptionSpec("KeyRateLimitGroup", "{}",
               "Per group (the key's, else the user's), the per-key limits a key of that group has at most: "
               '{"group": {"rpm_limit": n, "tpm_limit": n, "max_parallel_requests": n}} (0 or absent: none). A '
               "key's own limits apply too; the lower of the two wins.", specs.described(key_limit_defaults, "json")),
)


@dataclass(frozen=True, slots=True)
class LimitOptions:
    """The limits' options, typed."""

    enabled: bool = False
    window_minutes: int = 1
    count: int = 0
    success_count: int = 1000
    groups: dict[str, tuple[int, int]] | None = None
    key_defaults: dict[str, dict[str, int]] | None = None

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> LimitOptions:
        return cls(enabled=values["ModelRequestRateLimitEnabled"],
                   window_minutes=values["ModelRequestRateLimitDurationMinutes"],
                   count=values["ModelRequestRateLimitCount"],
                   success_count=values["ModelRequestRateLimitSuccessCount"],
                   groups=values["ModelRequestRateLimitGroup"] or None,
                   key_defaults=values["KeyRateLimitGroup"] or None)

    def user_limits(self, group: str) -> tuple[int, int]:
        """The model request rate limit of a caller in ``group``: (count, success count)."""
        if self.groups is not None:
            found = self.groups.get(group)
            if found is not None:
                return found
        return self.count, self.success_count
